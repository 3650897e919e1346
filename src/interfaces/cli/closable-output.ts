import type { OutputStream } from './io.ts';

/** The part of a Node or Deno write stream the CLI uses. */
export interface ProcessStream {
  write(text: string): boolean;
  on(event: 'error', listener: (error: Error) => void): unknown;
  readonly isTTY?: boolean | undefined;
}

/**
 * Wraps stdout or stderr so that a reader that goes away (`fabric run … | head -1`: EPIPE) stops
 * the output, never the run: the stream's 'error' is handled, and later writes are dropped. An
 * unhandled 'error' on process.stdout would end the process before the run writes its run_end.
 */
export function closableOutput(stream: ProcessStream): OutputStream & { readonly closed: boolean } {
  let closed = false;
  stream.on('error', () => {
    closed = true;
  });
  return {
    get closed() {
      return closed;
    },
    get isTTY() {
      return stream.isTTY;
    },
    write(text: string): boolean {
      if (closed) return false;
      try {
        return stream.write(text);
      } catch {
        // Deno and synchronous pipes can throw EPIPE from write() itself.
        closed = true;
        return false;
      }
    },
  };
}
