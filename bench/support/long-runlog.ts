import type { RunEventInput } from '../../src/domain/run-events.ts';
import { unifiedDiff } from '../../src/domain/unified-diff.ts';
import type { FileRunLogStore } from '../../src/infrastructure/runlog/file-run-log-store.ts';

/**
 * Writes a finished run of `steps` steps, as a rust run would leave it: each step a model turn
 * with text, an edit_file call with its diff, or a read_file / cargo_check with a result of a
 * few hundred lines. Returns the run id.
 */
export async function writeLongRun(store: FileRunLogStore, runId: string, steps: number): Promise<void> {
  const log = await store.create(runId);
  const source = Array.from({ length: 120 }, (_, i) => `    let value_${i} = region.area() + ${i};`).join(
    '\n',
  );
  await log.append({
    kind: 'run_start',
    specialist: 'rust',
    task: 'Add Region::contains_point(x, y) and a unit test for it',
    model: 'qwen/qwen3-coder-30b',
    backend: 'lm_studio',
    workspace: '/work/compositor',
    config_digest: 'bench',
    fabric_version: '0.1.0',
    max_steps: steps,
    budget_s: 3600,
  });
  for (let step = 1; step <= steps; step++) {
    const callId = `call_${step}`;
    const tool = step % 3 === 0 ? 'edit_file' : step % 3 === 1 ? 'read_file' : 'cargo_check';
    const args =
      tool === 'edit_file'
        ? { path: 'src/region.rs', old_text: `value_${step % 120}`, new_text: `value_${step % 120}_b` }
        : tool === 'read_file'
          ? { path: 'src/region.rs' }
          : {};
    const events: RunEventInput[] = [
      {
        kind: 'llm_request',
        step,
        model: 'm',
        messages: 2 * step,
        tools: [tool],
        final_turn: false,
        new_messages: [],
      },
      {
        kind: 'llm_response',
        step,
        content: `Step ${step}: I will ${tool === 'edit_file' ? 'rename a binding' : 'look at the code'} <and> check it.`,
        tool_calls: [{ id: callId, name: tool, arguments: JSON.stringify(args) }],
        finish_reason: 'tool_calls',
        usage: { prompt_tokens: 900, completion_tokens: 40, total_tokens: 940 },
        latency_ms: 800,
        attempts: 1,
        backend: 'lm_studio',
      },
      { kind: 'tool_call', step, call_id: callId, tool, arguments: JSON.stringify(args) },
      tool === 'edit_file'
        ? {
            kind: 'tool_result',
            step,
            call_id: callId,
            tool,
            result: 'Edited src/region.rs. Run cargo_check next.',
            duration_ms: 2,
            diff: unifiedDiff(
              'src/region.rs',
              source,
              source.replace(`value_${step % 120} `, `value_${step % 120}_b `),
            ),
          }
        : {
            kind: 'tool_result',
            step,
            call_id: callId,
            tool,
            result:
              tool === 'read_file' ? source : 'warning: unused variable `value_3`\n --> src/region.rs:4:9\n',
            duration_ms: 30,
          },
    ];
    for (const event of events) await log.append(event);
  }
  await log.append({
    kind: 'run_end',
    status: 'succeeded',
    payload: { summary: 'Done', artifacts: ['src/region.rs'], next_steps: [], notes: '' },
    error: null,
    steps,
    usage: { prompt_tokens: 900 * steps, completion_tokens: 40 * steps, total_tokens: 940 * steps },
    duration_ms: 800 * steps,
  });
  await log.close();
}
