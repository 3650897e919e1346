import type { Clock } from '../../../src/application/ports.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';
import { FileRunLogStore } from '../../../src/infrastructure/runlog/file-run-log-store.ts';
import { tempDir } from '../../support/temp-dirs.ts';

/** A clock that moves `stepMs` forward at every reading, so each line has its own time. */
export function steppingClock(start: string, stepMs = 1_000): Clock {
  let t = Date.parse(start);
  return {
    now() {
      const now = new Date(t);
      t += stepMs;
      return now;
    },
  };
}

export async function tempRunsDir(): Promise<string> {
  return tempDir('fabric-control-');
}

/** Writes a real runlog through the file store and returns its lines as written. */
export async function writeRunlog(
  runsDir: string,
  runId: string,
  start: string,
  inputs: readonly RunEventInput[],
): Promise<RunEvent[]> {
  const store = new FileRunLogStore(runsDir, steppingClock(start));
  const log = await store.create(runId);
  const events: RunEvent[] = [];
  for (const input of inputs) events.push(await log.append(input));
  await log.close();
  return events;
}

const usage = (prompt: number, completion: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

function runStart(model: string, backend: string): RunEventInput {
  return {
    kind: 'run_start',
    specialist: 'rust',
    task: 'make the compositor build',
    model,
    backend,
    workspace: '/tmp/ws',
    config_digest: 'sha256:abc',
    fabric_version: '0.1.0',
    max_steps: 30,
    budget_s: 600,
  };
}

function request(step: number, model: string): RunEventInput {
  return {
    kind: 'llm_request',
    step,
    model,
    messages: step * 2,
    tools: ['list_files'],
    final_turn: false,
    new_messages: [],
  };
}

function response(
  step: number,
  backend: string,
  tool: string,
  latency: number,
  tokens: [number, number],
): RunEventInput {
  return {
    kind: 'llm_response',
    step,
    content: '',
    tool_calls: [{ id: `call_${step}`, name: tool, arguments: '{}' }],
    finish_reason: 'tool_calls',
    usage: usage(...tokens),
    latency_ms: latency,
    attempts: 1,
    backend,
  };
}

/**
 * A run that succeeds after four answered model calls and one retried attempt, with tool
 * results, a refused tool, a security event and a rejected finish on the way (19 lines).
 */
export function succeededRun(
  model = 'qwen2.5-coder-7b',
  backend = 'lm_studio http://127.0.0.1:1234',
): RunEventInput[] {
  return [
    runStart(model, backend),
    request(1, model),
    response(1, backend, 'list_files', 800, [100, 20]),
    { kind: 'tool_call', step: 1, call_id: 'call_1', tool: 'list_files', arguments: '{}' },
    {
      kind: 'tool_result',
      step: 1,
      call_id: 'call_1',
      tool: 'list_files',
      result: 'src/\nCargo.toml',
      duration_ms: 3,
    },
    request(2, model),
    { kind: 'llm_retry', step: 2, attempt: 1, delay_ms: 250, reason: 'HTTP 503' },
    { ...response(2, backend, 'read_file', 1200, [200, 30]), attempts: 2 } as RunEventInput,
    {
      kind: 'tool_call',
      step: 2,
      call_id: 'call_2',
      tool: 'read_file',
      arguments: '{"path":"../etc/passwd"}',
    },
    {
      kind: 'security_event',
      step: 2,
      call_id: 'call_2',
      tool: 'read_file',
      event_type: 'sandbox_violation',
      rule: 'path_outside_workspace',
      requested: '../etc/passwd',
    },
    {
      kind: 'tool_error',
      step: 2,
      call_id: 'call_2',
      tool: 'read_file',
      error: 'outside the workspace',
      reason: 'refused',
      duration_ms: 1,
    },
    request(3, model),
    response(3, backend, 'finish_task', 1000, [300, 40]),
    { kind: 'tool_call', step: 3, call_id: 'call_3', tool: 'finish_task', arguments: '{"summary":"done"}' },
    {
      kind: 'finish_rejected',
      step: 3,
      call_id: 'call_3',
      reason: 'gate_failed',
      message: 'cargo check failed',
    },
    request(4, model),
    response(4, backend, 'finish_task', 600, [400, 50]),
    { kind: 'tool_call', step: 4, call_id: 'call_4', tool: 'finish_task', arguments: '{"summary":"done"}' },
    {
      kind: 'run_end',
      status: 'succeeded',
      payload: { summary: 'done', artifacts: [], next_steps: [], notes: '' },
      error: null,
      steps: 4,
      usage: usage(1000, 140),
      duration_ms: 18_000,
    },
  ];
}

/** A run whose backend never answers: two retried attempts, then `backend_unavailable` (5 lines). */
export function unavailableRun(
  model = 'llama3.1:8b',
  backend = 'ollama http://127.0.0.1:11434',
): RunEventInput[] {
  return [
    runStart(model, backend),
    request(1, model),
    { kind: 'llm_retry', step: 1, attempt: 1, delay_ms: 500, reason: 'connection refused' },
    { kind: 'llm_retry', step: 1, attempt: 2, delay_ms: 1000, reason: 'connection refused' },
    {
      kind: 'run_end',
      status: 'failed',
      payload: null,
      error: { code: 'backend_unavailable', message: 'Ollama did not answer.' },
      steps: 1,
      usage: usage(0, 0),
      duration_ms: 4_000,
    },
  ];
}

/** A run on a model without tool support: one failed call, no retry (3 lines). */
export function lacksToolsRun(
  model = 'gemma:2b',
  backend = 'ollama http://127.0.0.1:11434',
): RunEventInput[] {
  return [
    runStart(model, backend),
    request(1, model),
    {
      kind: 'run_end',
      status: 'failed',
      payload: null,
      error: { code: 'model_lacks_tools', message: 'gemma:2b does not support tools.' },
      steps: 1,
      usage: usage(0, 0),
      duration_ms: 900,
    },
  ];
}
