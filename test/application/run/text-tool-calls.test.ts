import { describe, expect, it } from 'vitest';
import { recoverTextToolCalls, scanTextToolCalls } from '../../../src/application/run/text-tool-calls.ts';

const offered = new Set(['read_file', 'finish_task']);

describe('recoverTextToolCalls', () => {
  it('recovers Hermes <tool_call> blocks, several of them', () => {
    const text =
      'Let me look.\n<tool_call>{"name":"read_file","arguments":{"path":"a.rs"}}</tool_call>\n' +
      '<tool_call>{"name":"read_file","arguments":{"path":"b.rs"}}</tool_call>';
    const recovered = recoverTextToolCalls(text, offered, 3);
    expect(recovered?.format).toBe('hermes');
    expect(recovered?.calls).toEqual([
      { id: 'r00003000', name: 'read_file', arguments: '{"path":"a.rs"}' },
      { id: 'r00003001', name: 'read_file', arguments: '{"path":"b.rs"}' },
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

/**
 * The dialects of SPEC §16, with the shapes recorded in ../shared/research/local-model-quirks.md
 * (and the issues named there): each recovered when it names an offered tool, refused otherwise.
 */
describe('scanTextToolCalls: the dialects local models write', () => {
  const tools = new Set(['read_file', 'write_file', 'grep', 'finish_task']);
  const scan = (text: string, schemas?: ReadonlyMap<string, Record<string, unknown>>) =>
    scanTextToolCalls(text, tools, 2, schemas);
  const args = (text: string) => scan(text)?.calls.map((call) => [call.name, JSON.parse(call.arguments)]);

  it.each([
    [
      'qwen3_coder_xml',
      '<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.rs\n</parameter>\n<parameter=content>\nfn main() {}\n\n</parameter>\n</function>\n</tool_call>',
      [['write_file', { path: 'src/a.rs', content: 'fn main() {}\n' }]],
    ],
    [
      'qwen3_coder_xml',
      // LM Studio #2115: no <tool_call> around it, the last tags cut off by the end of the stream.
      '<function=read_file><parameter=path>a.rs</parameter></function>\n<function=read_file>\n<parameter=path>\nb.rs\n',
      [
        ['read_file', { path: 'a.rs' }],
        ['read_file', { path: 'b.rs' }],
      ],
    ],
    ['mistral', '[TOOL_CALLS]read_file[ARGS]{"path": "a.rs"}', [['read_file', { path: 'a.rs' }]]],
    [
      'mistral',
      '[TOOL_CALLS]read_file[ARGS]{"path":"a.rs"}[TOOL_CALLS]grep[CALL_ID]a1b2c3d4e[ARGS]{"pattern":"fn [a-z]+"}</s>',
      [
        ['read_file', { path: 'a.rs' }],
        ['grep', { pattern: 'fn [a-z]+' }],
      ],
    ],
    [
      'mistral',
      '[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a.rs"}}, {"name": "grep", "arguments": {"pattern": "x"}}]',
      [
        ['read_file', { path: 'a.rs' }],
        ['grep', { pattern: 'x' }],
      ],
    ],
    [
      'llama3_python_tag',
      '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.rs"}}<|eom_id|>',
      [['read_file', { path: 'a.rs' }]],
    ],
    [
      'llama3_python_tag',
      '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.rs"}}; {"name": "grep", "parameters": {"pattern": "}"}}',
      [
        ['read_file', { path: 'a.rs' }],
        ['grep', { pattern: '}' }],
      ],
    ],
    [
      'llama3_function_tag',
      '<function=read_file>{"path": "a.rs"}</function>',
      [['read_file', { path: 'a.rs' }]],
    ],
    [
      'harmony',
      '<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path":"a.rs"}<|call|>',
      [['read_file', { path: 'a.rs' }]],
    ],
    [
      'harmony',
      '<|start|>assistant to=functions.write_file<|channel|>commentary json<|message|>{"path":"b.rs","content":"x"}',
      [['write_file', { path: 'b.rs', content: 'x' }]],
    ],
    [
      'lfm',
      '<|tool_call_start|>[read_file(path="a.rs")]<|tool_call_end|>',
      [['read_file', { path: 'a.rs' }]],
    ],
    [
      'lfm',
      "<|tool_call_start|>[read_file(path='a \\'b\\'.rs'), grep(pattern=\"x, y)\", max=3, exact=True)]<|tool_call_end|>",
      [
        ['read_file', { path: "a 'b'.rs" }],
        ['grep', { pattern: 'x, y)', max: 3, exact: true }],
      ],
    ],
    ['bare_json', '{"name": "read_file", "args": {"path": "a.rs"}}', [['read_file', { path: 'a.rs' }]]],
    [
      'gemma4',
      '<|tool_call>call:write_file{content:<|"|>hello, {world}<|"|>,path:<|"|>a.txt<|"|>}<tool_call|>',
      [['write_file', { content: 'hello, {world}', path: 'a.txt' }]],
    ],
    [
      'gemma4',
      'call:write_file{content:hello,path:a.txt}',
      [['write_file', { content: 'hello', path: 'a.txt' }]],
    ],
    [
      'gemma4',
      '<|tool_call>call:grep(pattern: "fn", max: 2)<tool_call|>',
      [['grep', { pattern: 'fn', max: 2 }]],
    ],
    [
      'hermes',
      '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.rs"}}\n',
      [['read_file', { path: 'a.rs' }]],
    ],
  ])('reads %s: %s', (dialect, text, expected) => {
    expect(scan(text)?.format).toBe(dialect);
    expect(args(text)).toEqual(expected);
    expect(scan(text)?.calls.map((call) => call.id)).toEqual(
      expected.map((_, i) => `r00002${String(i).padStart(3, '0')}`),
    );
  });

  it.each([
    ['hermes', '<tool_call>{"name": "shell", "arguments": {"command": "rm -rf /"}}</tool_call>'],
    ['qwen3_coder_xml', '<function=shell><parameter=command>rm -rf /</parameter></function>'],
    ['mistral', '[TOOL_CALLS]shell[ARGS]{"command": "rm -rf /"}'],
    ['llama3_python_tag', '<|python_tag|>{"name": "shell", "parameters": {"command": "rm -rf /"}}'],
    [
      'harmony',
      '<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{"command":"rm -rf /"}<|call|>',
    ],
    ['lfm', '<|tool_call_start|>[shell(command="rm -rf /")]<|tool_call_end|>'],
    ['gemma4', '<|tool_call>call:shell{command:<|"|>rm -rf /<|"|>}<tool_call|>'],
    ['bare_json', '{"name": "shell", "arguments": {"command": "rm -rf /"}}'],
  ])('runs no %s call to a tool that was not offered, and names it', (dialect, text) => {
    expect(scan(text)).toEqual({ format: dialect, calls: [], refused: ['shell'], malformed: 0 });
    expect(recoverTextToolCalls(text, tools, 2)).toBeNull();
  });

  it('keeps the offered calls of a turn that also calls an unoffered tool', () => {
    const scanned = scan('[TOOL_CALLS]read_file[ARGS]{"path":"a.rs"}[TOOL_CALLS]shell[ARGS]{"command":"id"}');
    expect(scanned?.calls.map((call) => call.name)).toEqual(['read_file']);
    expect(scanned?.refused).toEqual(['shell']);
  });

  it('types XML parameter values by the tool schema, and keeps text where the schema says string', () => {
    const schemas = new Map([
      [
        'grep',
        {
          type: 'object',
          properties: { pattern: { type: 'string' }, max: { type: 'integer' }, exact: { type: 'boolean' } },
        },
      ],
    ]);
    const text =
      '<function=grep><parameter=pattern>42</parameter><parameter=max>\n3\n</parameter><parameter=exact>true</parameter></function>';
    expect(JSON.parse(scan(text, schemas)!.calls[0]!.arguments)).toEqual({
      pattern: '42',
      max: 3,
      exact: true,
    });
  });

  it('counts markup it cannot read, and finds nothing in prose or in JSON that is an answer', () => {
    expect(scan('<tool_call>{"name": "read_file", broken</tool_call>')).toMatchObject({
      format: 'hermes',
      calls: [],
      malformed: 1,
    });
    expect(scan('[TOOL_CALLS]read_file{"path":"a"}')).toMatchObject({ format: 'mistral', malformed: 1 });
    expect(scan('Use the read_file tool to check a.rs, then call: grep.')).toBeNull();
    expect(scan('{"name": "Bob", "age": 3}')).toBeNull();
    expect(scan('The answer is 42.')).toBeNull();
  });
});

describe('scanTextToolCalls on hostile text', () => {
  const tools = new Set(['write_file', 'finish_task']);

  it('reads nothing, and does not exhaust the stack, from nesting thousands deep', () => {
    const deep = `<|tool_call>call:write_file{path:${'['.repeat(20_000)}1${']'.repeat(20_000)}}<tool_call|>`;
    expect(scanTextToolCalls(deep, tools, 1)).toMatchObject({ format: 'gemma4', calls: [], malformed: 1 });
    const lfm = `<|tool_call_start|>[write_file(path=${'['.repeat(20_000)})]<|tool_call_end|>`;
    expect(scanTextToolCalls(lfm, tools, 1)).toMatchObject({ calls: [], malformed: 1 });
    const json = `<tool_call>${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}</tool_call>`;
    expect(scanTextToolCalls(json, tools, 1)).toMatchObject({ format: 'hermes', calls: [] });
  });

  it('keeps a megabyte of content in one call whole, and finds no call in a megabyte of prose', () => {
    const content = 'x'.repeat(1_000_000);
    const call = `<tool_call>{"name":"write_file","arguments":{"path":"a","content":"${content}"}}</tool_call>`;
    expect(JSON.parse(scanTextToolCalls(call, tools, 1)!.calls[0]!.arguments).content).toHaveLength(
      1_000_000,
    );
    expect(scanTextToolCalls(`call: ${'to=functions. <function '.repeat(40_000)}`, tools, 1)).toBeNull();
  });
});
