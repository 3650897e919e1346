import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { ScriptedTurn } from '../../support/fake-llm-server.ts';
import { rustOnFakes } from '../../support/rust-run.ts';

/**
 * Issue 36, research/local-model-quirks-2.md Q4: code arguments escaped one level too many.
 * qwen2.5:14b-instruct on Ollama (openclaw PR #110823) sends
 * `"content":"class Calculator:\\n\\tdef add…"`: decoded, the file would hold a backslash and an
 * `n` where each line break belongs. The call is not run, the model is told, and the runlog says so.
 */
const MODEL = 'qwen2.5:14b-instruct';
const CODE = 'class Calculator:\n\tdef add(self, a, b):\n\t\treturn a + b\n';
/** The same code as the model wrote it: every line break and tab one level too escaped. */
const OVERESCAPED = CODE.replaceAll('\n', '\\n').replaceAll('\t', '\\t');
/**
 * Code with real line breaks whose string literals hold `\n` and `\t` as they should, even right
 * after a `:` and a `;` as in over-escaped code: the real line breaks say it is not.
 */
const LITERALS = 'def show(a):\n\tprint("a:\\n\\tb;\\nc", a)\n\treturn {"k": "x\\ny"}\n';

const write = (content: string): ScriptedTurn => ({
  reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'calc.py', content } }] },
});
const FINISH: ScriptedTurn = {
  reply: {
    toolCalls: [
      {
        name: 'finish_task',
        arguments: { summary: 'Wrote calc.py.', artifacts: ['calc.py'], next_steps: [], notes: '' },
      },
    ],
  },
};

type Quirk = Extract<RunEvent, { kind: 'model_quirk' }>;
const quirks = (events: RunEvent[]) => events.filter((e): e is Quirk => e.kind === 'model_quirk');
const results = (events: RunEvent[]) =>
  events.filter((e) => e.kind === 'tool_result' || e.kind === 'tool_error');

describe('over-escaped code arguments (issue 36, Q4)', () => {
  const rustOn = rustOnFakes();
  const run = (script: ScriptedTurn[]) =>
    rustOn({ flavor: 'ollama', models: [{ id: MODEL, toolUse: true }], script }, 'Write calc.py', [
      '--model',
      MODEL,
    ]);

  it('a write_file whose content has literal \\n and no line break is not run; the model is told, sends it right, and the file is byte-exact', async () => {
    const {
      run: result,
      events,
      stderr,
      server,
      workspace,
    } = await run([write(OVERESCAPED), write(CODE), FINISH]);
    expect(result.status, stderr).toBe('succeeded');
    expect(await readFile(join(workspace, 'calc.py'), 'utf8')).toBe(CODE);
    expect(server.chatRequests()).toHaveLength(3);
    expect(quirks(events)).toMatchObject([
      { quirk: 'arguments_overescaped', note: 'Q4', tool: 'write_file', field: 'content', raw: OVERESCAPED },
    ]);
    const [refused, written] = results(events);
    expect(refused).toMatchObject({
      kind: 'tool_error',
      reason: 'invalid_arguments',
      error: expect.stringContaining(
        'arrived with literal \\n (a backslash and an n) instead of real newlines',
      ),
    });
    expect(written).toMatchObject({ kind: 'tool_result', tool: 'write_file' });
    // Nothing was written by the refused call: no tool_started for it.
    const started = events.filter((e) => e.kind === 'tool_started' && e.tool === 'write_file');
    expect(started).toHaveLength(1);
    const second = server.chatRequests()[1]?.body as { messages: { role: string; content: string }[] };
    expect(second.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: expect.stringContaining('Call write_file again with real newlines'),
    });
  });

  it('an edit_file whose new_text is over-escaped is not made: the file stays as it was', async () => {
    const OLD = '    pub fn new() -> Self {\n        Self::default()\n    }\n';
    const NEW = '    pub fn new() -> Self {\n        Self { rects: Vec::new() }\n    }\n';
    const edit = (new_text: string): ScriptedTurn => ({
      reply: {
        toolCalls: [{ name: 'edit_file', arguments: { path: 'src/region.rs', old_text: OLD, new_text } }],
      },
    });
    const overescaped = NEW.replaceAll('\n', '\\n');
    const { run: result, events, stderr, workspace } = await run([edit(overescaped), FINISH]);
    expect(result.status, stderr).toBe('succeeded');
    expect(await readFile(join(workspace, 'src/region.rs'), 'utf8')).toContain(OLD);
    expect(quirks(events)).toMatchObject([
      { quirk: 'arguments_overescaped', tool: 'edit_file', field: 'new_text', raw: overescaped },
    ]);
    expect(results(events)).toMatchObject([
      {
        kind: 'tool_error',
        reason: 'invalid_arguments',
        error: expect.stringContaining('Call edit_file again with real newlines'),
      },
    ]);
  });

  it('code with real line breaks whose string literals hold \\n is written as it is, not flagged', async () => {
    const { run: result, events, stderr, workspace } = await run([write(LITERALS), FINISH]);
    expect(result.status, stderr).toBe('succeeded');
    expect(await readFile(join(workspace, 'calc.py'), 'utf8')).toBe(LITERALS);
    expect(quirks(events)).toEqual([]);
    expect(results(events)).toMatchObject([{ kind: 'tool_result', tool: 'write_file' }]);
  });
});
