/** One server-sent event: its `event` name (null when unnamed) and its `data` lines joined by `\n`. */
export interface SseMessage {
  readonly event: string | null;
  readonly data: string;
}

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;

/**
 * Decodes `text/event-stream` text (WHATWG HTML, server-sent events) from chunks split anywhere:
 * lines end in `\n`, `\r\n` or `\r`; `data:` lines accumulate; a blank line dispatches the event;
 * comments and other fields are skipped. An event with no `data` line is not dispatched, and one
 * the stream ends before its blank line is dropped, as the standard says.
 */
export class SseDecoder {
  #buffer = '';
  /** The last chunk ended in `\r`: a `\n` starting the next one belongs to that line end. */
  #afterCr = false;
  #event: string | null = null;
  #data: string | null = null;

  /** Adds a chunk of text; returns the events it completed. */
  push(chunk: string): SseMessage[] {
    let text = chunk;
    if (this.#afterCr && text.charCodeAt(0) === LF) text = text.slice(1);
    this.#afterCr = false;
    text = this.#buffer + text;
    const hasCr = text.includes('\r');
    const messages: SseMessage[] = [];
    let start = 0;
    for (;;) {
      const end = hasCr ? lineEnd(text, start) : text.indexOf('\n', start);
      if (end === -1) break;
      this.#line(text.slice(start, end), messages);
      start = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (start === text.length) this.#afterCr = true;
        else if (text.charCodeAt(start) === LF) start += 1;
      }
    }
    this.#buffer = text.slice(start);
    return messages;
  }

  #line(line: string, messages: SseMessage[]): void {
    if (line === '') {
      if (this.#data !== null) messages.push({ event: this.#event, data: this.#data });
      this.#event = null;
      this.#data = null;
      return;
    }
    if (line.charCodeAt(0) === COLON) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === SPACE) value = value.slice(1);
    if (field === 'data') this.#data = this.#data === null ? value : `${this.#data}\n${value}`;
    else if (field === 'event') this.#event = value;
  }
}

function lineEnd(text: string, from: number): number {
  const lf = text.indexOf('\n', from);
  const cr = text.indexOf('\r', from);
  if (lf === -1) return cr;
  if (cr === -1) return lf;
  return Math.min(lf, cr);
}
