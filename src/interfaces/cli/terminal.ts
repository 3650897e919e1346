/**
 * The terminal a person answers at (SPEC §19's prompt): one key at a time in raw mode, a line
 * for a message. Runtime-specific (process.stdin), so the prompt itself stays testable without it.
 * Raw mode is left on every path: a key, the end of input, or the abort of the read.
 */
import process from 'node:process';

export interface TerminalInput {
  /** One key as typed (`\x03` for Ctrl-C), or undefined at the end of input or when `signal` aborts. */
  readKey(signal: AbortSignal): Promise<string | undefined>;
  /** Cancels the run, as Ctrl-C does outside raw mode. */
  interrupt(): void;
}

/** The process's terminal, when both standard input and standard error are one; else undefined. */
export function processTerminal(interrupt: () => void): TerminalInput | undefined {
  const stdin = process.stdin;
  if (stdin.isTTY !== true || process.stderr.isTTY !== true || typeof stdin.setRawMode !== 'function')
    return undefined;
  return {
    interrupt,
    readKey: (signal) =>
      new Promise<string | undefined>((resolve) => {
        if (signal.aborted) {
          resolve(undefined);
          return;
        }
        const done = (key: string | undefined) => {
          stdin.off('data', onData);
          stdin.off('end', onEnd);
          signal.removeEventListener('abort', onAbort);
          stdin.setRawMode(false);
          stdin.pause();
          resolve(key);
        };
        const onData = (chunk: Buffer | string) => done(chunk.toString());
        const onEnd = () => done(undefined);
        const onAbort = () => done(undefined);
        stdin.setRawMode(true);
        stdin.on('data', onData);
        stdin.once('end', onEnd);
        signal.addEventListener('abort', onAbort, { once: true });
        stdin.resume();
      }),
  };
}
