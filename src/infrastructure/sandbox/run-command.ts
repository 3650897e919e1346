import { HeadTailBuffer } from './output-cap.ts';
import { loadExeca } from '../lazy-import.ts';

/** One process to run: the exact argv, a from-scratch environment, and its limits. */
export interface RunRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The complete environment; nothing of the fabric's own is added. */
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** Per stream: the head and tail kept of stdout and of stderr. */
  readonly outputLimitBytes: number;
  /** Total output after which the command is killed: nobody reads gigabytes. */
  readonly floodLimitBytes: number;
  readonly signal: AbortSignal;
}

/** How a command ended. `exited` includes failures; the others mean the fabric killed it. */
export type RunEnd = 'exited' | 'timeout' | 'cancelled' | 'flood' | 'spawn_failed';

/** What a command did, bounded. */
export interface RunOutcome {
  readonly end: RunEnd;
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
  /** Bytes printed in all, kept or not. */
  readonly outputBytes: number;
  readonly truncated: boolean;
  readonly durationMs: number;
  /** Why the process could not start, when `end` is `spawn_failed`. */
  readonly spawnError: string | undefined;
}

/** Process groups still running, killed if the fabric itself exits first. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** How long streams may stay open after the process is gone (a grandchild holding the pipe). */
const STREAM_GRACE_MS = 1500;

/**
 * Runs one process with no shell, stdin closed, in its own process group. A timeout, a
 * cancellation or an output flood kills the whole group with SIGKILL; when the process exits,
 * whatever it left behind in its group is killed too. Inside bubblewrap the group is bwrap
 * itself, whose death takes the sandbox's PID namespace, and every process in it, along.
 */
export async function runCommand(request: RunRequest): Promise<RunOutcome> {
  const started = Date.now();
  const { execa } = await loadExeca();
  if (request.signal.aborted) return emptyOutcome('cancelled', started);
  installExitHook();
  const stdout = new HeadTailBuffer(request.outputLimitBytes);
  const stderr = new HeadTailBuffer(request.outputLimitBytes);
  const subprocess = execa(request.file, [...request.args], {
    cwd: request.cwd,
    env: { ...request.env },
    extendEnv: false,
    stdin: 'ignore',
    buffer: false,
    reject: false,
    detached: true,
    cleanup: false,
    windowsHide: true,
  });
  const pid = subprocess.pid;
  if (pid !== undefined) liveGroups.add(pid);
  let end: RunEnd = 'exited';
  let forceSettle: (() => void) | undefined;
  const killTree = (reason: RunEnd) => {
    if (end === 'exited') end = reason;
    killGroup(pid);
    setTimeout(() => forceSettle?.(), STREAM_GRACE_MS).unref();
  };
  const onData = (buffer: HeadTailBuffer) => (chunk: Buffer) => {
    buffer.push(chunk);
    if (stdout.total + stderr.total > request.floodLimitBytes && end === 'exited') killTree('flood');
  };
  subprocess.stdout?.on('data', onData(stdout));
  subprocess.stderr?.on('data', onData(stderr));
  const timer = setTimeout(() => killTree('timeout'), request.timeoutMs);
  const onAbort = () => killTree('cancelled');
  request.signal.addEventListener('abort', onAbort, { once: true });
  subprocess.once('exit', () => {
    // Background children of the command are still in its group: take them down with it.
    killGroup(pid);
    setTimeout(() => forceSettle?.(), STREAM_GRACE_MS).unref();
  });
  const forced = new Promise<undefined>((resolve) => {
    forceSettle = () => {
      subprocess.stdout?.destroy();
      subprocess.stderr?.destroy();
      resolve(undefined);
    };
  });
  try {
    const result = await Promise.race([subprocess, forced]);
    const spawnFailed =
      result !== undefined && result.exitCode === undefined && end === 'exited' && result.failed;
    return {
      end: spawnFailed ? 'spawn_failed' : end,
      exitCode: result?.exitCode,
      stdout: stdout.text(),
      stderr: stderr.text(),
      outputBytes: stdout.total + stderr.total,
      truncated: stdout.truncated || stderr.truncated,
      durationMs: Date.now() - started,
      spawnError: spawnFailed ? result.shortMessage : undefined,
    };
  } finally {
    clearTimeout(timer);
    request.signal.removeEventListener('abort', onAbort);
    killGroup(pid);
    if (pid !== undefined) liveGroups.delete(pid);
  }
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: the group is already gone.
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const pid of liveGroups) killGroup(pid);
  });
}

function emptyOutcome(end: RunEnd, started: number): RunOutcome {
  return {
    end,
    exitCode: undefined,
    stdout: '',
    stderr: '',
    outputBytes: 0,
    truncated: false,
    durationMs: Date.now() - started,
    spawnError: undefined,
  };
}
