import { describe, expect, it } from 'vitest';
import { StreamAssembler } from '../../../src/infrastructure/llm/stream-assembler.ts';

const ids = () => {
  let n = 0;
  return () => `gen_${++n}`;
};

describe('StreamAssembler', () => {
  it('joins OpenAI-style argument fragments by index', () => {
    const a = new StreamAssembler(ids());
    a.push({
      choices: [
        {
          delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'read_file', arguments: '' } }] },
        },
      ],
    });
    a.push({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] } }] });
    a.push({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'th":"a"}' } }] } }] });
    a.push({ choices: [{ delta: {}, finish_reason: 'tool_calls' }] });
    a.push({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
    expect(a.finished).toBe(true);
    expect(a.result()).toEqual({
      content: '',
      toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a"}' }],
      finishReason: 'tool_calls',
      usage: { prompt: 5, completion: 2, total: 7 },
    });
  });

  it('keeps the name when older LM Studio repeats name "" in later fragments', () => {
    const a = new StreamAssembler(ids());
    a.push({
      choices: [
        {
          delta: { tool_calls: [{ index: 0, id: '365174485', function: { name: 'search', arguments: '' } }] },
        },
      ],
    });
    a.push({
      choices: [
        { delta: { tool_calls: [{ index: 0, function: { name: '', arguments: '{"pattern":"x"}' } }] } },
      ],
    });
    expect(a.result().toolCalls).toEqual([{ id: '365174485', name: 'search', arguments: '{"pattern":"x"}' }]);
  });

  it('takes whole calls in one delta, several at once (Ollama)', () => {
    const a = new StreamAssembler(ids());
    a.push({
      choices: [
        {
          delta: {
            content: '',
            tool_calls: [
              { index: 0, id: 'call_aaaaaaaa', function: { name: 'a', arguments: '{"x":1}' } },
              { index: 1, id: 'call_bbbbbbbb', function: { name: 'b', arguments: '{}' } },
            ],
          },
        },
      ],
    });
    expect(a.result().toolCalls.map((call) => call.name)).toEqual(['a', 'b']);
  });

  it('separates calls that reuse an index with different ids, and calls without an index', () => {
    const a = new StreamAssembler(ids());
    a.push({
      choices: [
        { delta: { tool_calls: [{ index: 0, id: 'x1', function: { name: 'a', arguments: '{}' } }] } },
      ],
    });
    a.push({
      choices: [
        { delta: { tool_calls: [{ index: 0, id: 'x2', function: { name: 'b', arguments: '{}' } }] } },
      ],
    });
    a.push({ choices: [{ delta: { tool_calls: [{ function: { name: 'c', arguments: '{}' } }] } }] });
    expect(a.result().toolCalls.map((call) => `${call.id}:${call.name}`)).toEqual([
      'x1:a',
      'x2:b',
      'gen_1:c',
    ]);
  });

  it('continues the last call with fragments that carry no index (quirks-2 Q29)', () => {
    const a = new StreamAssembler(ids());
    const push = (call: Record<string, unknown>) => a.push({ choices: [{ delta: { tool_calls: [call] } }] });
    push({ id: 'w1', function: { name: 'get_weather', arguments: '' } });
    push({ function: { arguments: '{"city":' } });
    push({ function: { arguments: '"Paris"}' } });
    push({ function: { name: 'get_time', arguments: '{"tz":"JST"}' } });
    expect(a.result().toolCalls).toEqual([
      { id: 'w1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { id: 'gen_1', name: 'get_time', arguments: '{"tz":"JST"}' },
    ]);
  });

  it('merges two entries of one index in one chunk (vLLM speculative decoding, quirks-2 Q29)', () => {
    const a = new StreamAssembler(ids());
    a.push({
      choices: [
        {
          delta: {
            tool_calls: [
              { index: 0, id: 'chatcmpl-tool-1', function: { name: 'read_file', arguments: '' } },
              { index: 0, function: { arguments: '{"pa' } },
            ],
          },
        },
      ],
    });
    a.push({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'th":"a"}' } }] } }] });
    expect(a.result().toolCalls).toEqual([
      { id: 'chatcmpl-tool-1', name: 'read_file', arguments: '{"path":"a"}' },
    ]);
  });

  it('gives an id to calls that came with an empty one, and knows a stream without finish_reason was cut', () => {
    const a = new StreamAssembler(ids());
    a.push({
      choices: [{ delta: { tool_calls: [{ index: 0, id: '', function: { name: 'a', arguments: '{}' } }] } }],
    });
    expect(a.finished).toBe(false);
    expect(a.result().toolCalls[0]?.id).toBe('gen_1');
  });
});

describe('StreamAssembler: reasoning (SPEC §16)', () => {
  const chunk = (delta: Record<string, unknown>) => ({ choices: [{ delta, finish_reason: null }] });

  it.each([
    ['reasoning_content', 'LM Studio, DeepSeek-style setting (lmstudio-bug-tracker #378)'],
    ['reasoning', 'LM Studio 0.3.23+ (gpt-oss), Ollama /v1'],
  ])('reads delta.%s apart from the content (%s)', (field) => {
    const assembler = new StreamAssembler();
    const pushed = [
      assembler.push(chunk({ role: 'assistant', content: '', [field]: 'The test ' })),
      assembler.push(chunk({ [field]: 'expects 13.' })),
      assembler.push(chunk({ content: 'Fixing it.' })),
      assembler.push({
        choices: [{ delta: {}, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: 10,
          completion_tokens: 20,
          total_tokens: 30,
          completion_tokens_details: { reasoning_tokens: 12 },
        },
      }),
    ];
    expect(pushed.map((p) => p.reasoning).join('')).toBe('The test expects 13.');
    expect(pushed.map((p) => p.text).join('')).toBe('Fixing it.');
    expect(assembler.result()).toMatchObject({
      content: 'Fixing it.',
      reasoning: 'The test expects 13.',
      reasoningTokens: 12,
    });
  });

  it('takes <think> out of the content across chunks, and the blank line after it', () => {
    const assembler = new StreamAssembler();
    for (const piece of ['<th', 'ink>plan: read a', '.rs</thi', 'nk>\n\n', 'Done.'])
      assembler.push(chunk({ content: piece }));
    assembler.push({ choices: [{ delta: {}, finish_reason: 'stop' }] });
    expect(assembler.result()).toMatchObject({ content: 'Done.', reasoning: 'plan: read a.rs' });
  });

  it('has no reasoning when the model gave none', () => {
    const assembler = new StreamAssembler();
    assembler.push(chunk({ content: 'plain' }));
    expect(assembler.result().reasoning).toBeUndefined();
  });
});
