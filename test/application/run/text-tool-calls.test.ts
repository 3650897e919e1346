import { describe, expect, it } from 'vitest';
import { recoverTextToolCalls } from '../../../src/application/run/text-tool-calls.ts';

const offered = new Set(['read_file', 'finish_task']);

describe('recoverTextToolCalls', () => {
  it('recovers Hermes <tool_call> blocks, several of them', () => {
    const text =
      'Let me look.\n<tool_call>{"name":"read_file","arguments":{"path":"a.rs"}}</tool_call>\n' +
      '<tool_call>{"name":"read_file","arguments":{"path":"b.rs"}}</tool_call>';
    const recovered = recoverTextToolCalls(text, offered, 3);
    expect(recovered?.format).toBe('hermes');
    expect(recovered?.calls).toEqual([
      { id: 'recovered_3_0', name: 'read_file', arguments: '{"path":"a.rs"}' },
      { id: 'recovered_3_1', name: 'read_file', arguments: '{"path":"b.rs"}' },
    ]);
  });

  it("recovers LM Studio's [TOOL_REQUEST] and bare or fenced JSON", () => {
    expect(
      recoverTextToolCalls(
        '[TOOL_REQUEST]{"name":"read_file","arguments":{"path":"x"}}[END_TOOL_REQUEST]',
        offered,
        1,
      )?.format,
    ).toBe('lmstudio_tool_request');
    expect(
      recoverTextToolCalls('```json\n{"name":"read_file","parameters":{"path":"x"}}\n```', offered, 1)
        ?.calls[0],
    ).toMatchObject({
      name: 'read_file',
      arguments: '{"path":"x"}',
    });
  });

  it('recovers nothing that names a tool that was not offered, or that is prose', () => {
    expect(
      recoverTextToolCalls('{"name":"shell","arguments":{"command":"rm -rf /"}}', offered, 1),
    ).toBeNull();
    expect(recoverTextToolCalls('<tool_call>{"name":"shell"}</tool_call>', offered, 1)).toBeNull();
    expect(recoverTextToolCalls('The file is read_file-able.', offered, 1)).toBeNull();
    expect(recoverTextToolCalls('{"name": "read_file", broken', offered, 1)).toBeNull();
  });
});
