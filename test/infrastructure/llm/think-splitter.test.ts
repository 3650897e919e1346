import { describe, expect, it } from 'vitest';
import { ThinkSplitter, splitThink } from '../../../src/infrastructure/llm/think-splitter.ts';

/** Splits `text` fed in pieces cut at `cuts`, and returns the whole turn and what each push said. */
function streamed(text: string, cuts: readonly number[]) {
  const splitter = new ThinkSplitter();
  const pieces: string[] = [];
  let at = 0;
  for (const cut of [...cuts, text.length]) {
    pieces.push(text.slice(at, cut));
    at = cut;
  }
  let content = '';
  let reasoning = '';
  for (const piece of pieces) {
    const out = splitter.push(piece);
    content += out.content;
    reasoning += out.reasoning;
  }
  const last = splitter.end();
  content += last.content;
  reasoning += last.reasoning;
  return { turn: { content: splitter.content, reasoning: splitter.reasoning }, content, reasoning };
}

describe('ThinkSplitter', () => {
  const text = '<think>The file has a typo.</think>\n\nFixed it.';

  it('takes <think> out of the content, wherever the chunks cut the tags', () => {
    for (let a = 0; a <= text.length; a++) {
      for (const b of [a, a + 1, a + 3, a + 7]) {
        if (b > text.length) continue;
        const out = streamed(text, a === b ? [a] : [a, b]);
        expect(out.turn, `cut at ${a},${b}`).toEqual({
          content: '\n\nFixed it.',
          reasoning: 'The file has a typo.',
        });
        expect(out.content + out.reasoning).not.toContain('<');
      }
    }
  });

  it('reads text before a lone </think> as reasoning (the template opened the tag)', () => {
    for (let a = 0; a <= 30; a++) {
      const out = streamed('Let me think about it.</think>Done.', [a]);
      expect(out.turn, `cut at ${a}`).toEqual({ content: 'Done.', reasoning: 'Let me think about it.' });
    }
  });

  it('reads a tag still open when the stream ends as reasoning', () => {
    expect(splitThink('<think>I should call read_file on a.rs')).toEqual({
      content: '',
      reasoning: 'I should call read_file on a.rs',
    });
    expect(streamed('<think>partial </thi', [10]).turn).toEqual({ content: '', reasoning: 'partial </thi' });
  });

  it('leaves content without tags as it is, and a lone "<" that starts no tag', () => {
    expect(splitThink('a < b and c <t> d')).toEqual({ content: 'a < b and c <t> d', reasoning: '' });
    expect(streamed('x <', [2]).turn).toEqual({ content: 'x <', reasoning: '' });
  });

  it('takes out several think blocks in one turn', () => {
    expect(splitThink('<think>a</think>one<think>b</think>two')).toEqual({
      content: 'onetwo',
      reasoning: 'ab',
    });
  });
});
