import type { Environment } from '../../config/env.ts';
import type { TerminalInput } from './terminal.ts';

/** A stream the CLI writes to. */
export interface OutputStream {
  write(text: string): unknown;
  readonly isTTY?: boolean | undefined;
}

/** Everything the CLI touches, passed in so tests can run it in-process. */
export interface CliIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  readonly env: Environment;
  readonly cwd: string;
  /** Aborted on Ctrl-C. */
  readonly signal: AbortSignal;
  /** Reads standard input to its end (`fabric run … -`); absent where there is none. */
  readonly readStdin?: () => Promise<string>;
  /** The terminal a person answers at (approvals, SPEC §19); absent without one (a pipe, a test). */
  readonly terminal?: TerminalInput | undefined;
}

/** Exit codes, documented in `fabric --help`. */
export const EXIT = {
  ok: 0,
  runFailed: 1,
  usage: 2,
  maxSteps: 3,
  noModel: 4,
  /** The run parked on an approval (SPEC §19): it goes on once answered. */
  awaitingApproval: 5,
  cancelled: 130,
} as const;
