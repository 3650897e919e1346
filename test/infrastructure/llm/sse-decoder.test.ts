import { describe, expect, it } from 'vitest';
import { SseDecoder, type SseMessage } from '../../../src/infrastructure/llm/sse-decoder.ts';

function decode(chunks: readonly string[]): SseMessage[] {
  const decoder = new SseDecoder();
  return chunks.flatMap((chunk) => decoder.push(chunk));
}

const STREAM = 'data: {"a":1}\n\nevent: error\ndata: {"error":"x"}\n\ndata: [DONE]\n\n';
const EXPECTED = [
  { event: null, data: '{"a":1}' },
  { event: 'error', data: '{"error":"x"}' },
  { event: null, data: '[DONE]' },
];

describe('SseDecoder', () => {
  it('dispatches one event per blank line, with its event name', () => {
    expect(decode([STREAM])).toEqual(EXPECTED);
  });

  it('gives the same events however the text is split, one character at a time included', () => {
    expect(decode(STREAM.split(''))).toEqual(EXPECTED);
    expect(decode([STREAM.slice(0, 9), STREAM.slice(9, 30), STREAM.slice(30)])).toEqual(EXPECTED);
  });

  it('takes \\r\\n and \\r as line ends, even a \\r\\n split between chunks', () => {
    expect(decode(['data: a\r', '\n\r', '\ndata: b\r\rdata: c\r\n\r\n'])).toEqual([
      { event: null, data: 'a' },
      { event: null, data: 'b' },
      { event: null, data: 'c' },
    ]);
  });

  it('joins the data lines of one event with \\n and strips one leading space', () => {
    expect(decode(['data:one\ndata:  two\ndata\n\n'])).toEqual([{ event: null, data: 'one\n two\n' }]);
  });

  it('skips comments, unknown fields and events without data, and drops an event left unfinished', () => {
    expect(
      decode([': keep-alive\n\nid: 7\nretry: 10\n\nevent: ping\n\ndata: {"b":2}\n\ndata: torn']),
    ).toEqual([{ event: null, data: '{"b":2}' }]);
  });
});
