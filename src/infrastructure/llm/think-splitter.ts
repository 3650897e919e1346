/**
 * Splits `<think>…</think>` out of a streamed content field (SPEC §16): templates that write a
 * model's reasoning into the content, tags cut across chunks, a lone `</think>` when the chat
 * template opened the tag itself (LM Studio #1368: MiniMax-M2.1, GLM-4.7), and a tag still open
 * when the stream ends (LM Studio 0.4.15, #1996). Text before a lone closing tag is reasoning.
 */

const OPEN = '<think>';
const CLOSE = '</think>';

/** What one piece of the stream carried, once its tags are taken out. */
export interface SplitText {
  readonly content: string;
  readonly reasoning: string;
}

/** How much of the end of `text` could be the start of `tag` (held back until the next chunk). */
function partialTagAt(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (tag.startsWith(text.slice(text.length - n))) return n;
  }
  return 0;
}

/** One stream's splitter: push each content delta, then `end()`. */
export class ThinkSplitter {
  #inside = false;
  /** Whether a tag was seen at all; a lone `</think>` turns what came before into reasoning. */
  #seenOpen = false;
  #pending = '';
  #content = '';
  #reasoning = '';
  /** Reasoning a server sent in a field of its own (`reasoning_content`, `reasoning`, `thinking`). */
  #field = '';

  /** Adds reasoning that came in its own field, not in the content. */
  addField(text: string): void {
    this.#field += text;
  }

  /** The content and reasoning a delta carried (a possible partial tag at its end is held back). */
  push(delta: string): SplitText {
    let text = this.#pending + delta;
    this.#pending = '';
    let content = '';
    let reasoning = '';
    for (;;) {
      const tag = this.#inside ? CLOSE : OPEN;
      const at = text.indexOf(tag);
      const lone = !this.#inside && !this.#seenOpen ? text.indexOf(CLOSE) : -1;
      if (lone >= 0 && (at < 0 || lone < at)) {
        // The template opened the tag: everything so far was reasoning.
        reasoning += text.slice(0, lone);
        this.#reasoning += this.#content;
        this.#content = '';
        this.#seenOpen = true;
        text = text.slice(lone + CLOSE.length);
        continue;
      }
      if (at < 0) {
        const keep = Math.max(
          partialTagAt(text, tag),
          !this.#inside && !this.#seenOpen ? partialTagAt(text, CLOSE) : 0,
        );
        const body = text.slice(0, text.length - keep);
        this.#pending = text.slice(text.length - keep);
        if (this.#inside) reasoning += body;
        else content += body;
        break;
      }
      if (this.#inside) reasoning += text.slice(0, at);
      else content += text.slice(0, at);
      this.#inside = !this.#inside;
      this.#seenOpen = true;
      text = text.slice(at + tag.length);
    }
    this.#content += content;
    this.#reasoning += reasoning;
    return { content, reasoning };
  }

  /** Flushes what was held back: an unclosed tag's text is reasoning, a partial tag is text. */
  end(): SplitText {
    const rest = this.#pending;
    this.#pending = '';
    if (this.#inside) {
      this.#reasoning += rest;
      return { content: '', reasoning: rest };
    }
    this.#content += rest;
    return { content: rest, reasoning: '' };
  }

  /**
   * Ends the stream and gives the turn: the content without its `<think>` blocks (and without the
   * blank line a template leaves after `</think>`), and the reasoning from its field and its tags,
   * absent when there was none.
   */
  finish(): { content: string; reasoning?: string } {
    this.end();
    const tagged = this.#reasoning;
    const reasoning = this.#field + (this.#field !== '' && tagged !== '' ? '\n' : '') + tagged;
    const content = tagged === '' ? this.#content : this.#content.replace(/^\s+/, '');
    return reasoning === '' ? { content } : { content, reasoning };
  }

  /** The whole turn so far, tags removed (reclassified after a lone `</think>`). */
  get content(): string {
    return this.#content;
  }

  get reasoning(): string {
    return this.#reasoning;
  }
}

/** Splits a whole text at once. */
export function splitThink(text: string): SplitText {
  const splitter = new ThinkSplitter();
  splitter.push(text);
  splitter.end();
  return { content: splitter.content, reasoning: splitter.reasoning };
}
