import { describe, expect, it } from 'vitest';
import { compactIfNeeded, estimateTokens, occupancy } from '../../../src/application/run/compaction.ts';
import type { ChatMessage } from '../../../src/domain/messages.ts';
import type { Conversation } from '../../../src/application/run/model-turn.ts';

const big = (n: number) => `${n}:`.padEnd(3000, 'x');

function conversation(turns: number): Conversation {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a compositor engineer.'.padEnd(2000, '.') },
    { role: 'user', content: 'Fix the damage tracking.' },
  ];
  for (let i = 0; i < turns; i += 1) {
    messages.push({
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: `c${i}`, name: 'write_file', arguments: JSON.stringify({ path: `f${i}.rs`, content: big(i) }) },
      ],
    });
    messages.push({ role: 'tool', toolCallId: `c${i}`, name: 'write_file', content: big(i) });
  }
  return { messages, sentCount: messages.length };
}

describe('compaction (SPEC §17)', () => {
  it('does nothing below 80% of the window', () => {
    const c = conversation(2);
    expect(compactIfNeeded(c, estimateTokens(c.messages), 100_000, 1024)).toBeNull();
  });

  it('stubs the oldest results and call arguments down to about half, never the head or the last turns', () => {
    const c = conversation(10);
    const before = estimateTokens(c.messages);
    const head = c.messages.slice(0, 2);
    const last = c.messages.slice(-4);
    const done = compactIfNeeded(c, before, 20_000, 1024);
    expect(done).not.toBeNull();
    expect(done!.tokensBefore).toBe(before);
    expect(done!.tokensAfter).toBeLessThanOrEqual(20_000 * 0.5 - 1024);
    expect(done!.firstChanged).toBe(2);
    expect(c.messages.slice(0, 2)).toEqual(head);
    expect(c.messages.slice(-4)).toEqual(last);
    const call = c.messages[2];
    expect(call?.role === 'assistant' && JSON.parse(call.toolCalls[0]!.arguments)).toEqual({
      path: 'f0.rs',
      content: '[3000 chars removed to fit the window]',
    });
    expect(c.messages[3]?.content).toMatch(/^\[write_file result \(3000 chars\) removed to fit the window/);
    expect(estimateTokens(c.messages)).toBeLessThanOrEqual(done!.tokensAfter + 1);
  });

  it("counts from the server's prompt tokens plus what came after, or estimates the whole without usage", () => {
    const c = conversation(3);
    expect(occupancy(c, { promptTokens: 5000, sentCount: 4 }, () => 0)).toBe(
      5000 + estimateTokens(c.messages.slice(4)),
    );
    expect(occupancy(c, { promptTokens: 0, sentCount: 4 }, () => 300)).toBe(estimateTokens(c.messages) + 100);
  });
});
