/**
 * One run at a time per workspace (SPEC §10): a second run on a busy workspace waits, or is
 * refused `workspace_busy` when asked not to wait. Runs of one process queue in order on an
 * in-memory chain; runs of other processes (a second `fabric run`, a server) are kept apart by a
 * lock file per workspace under the system's temp directory, keyed by the workspace's real path,
 * holding the owner's pid, host and run id. A lock whose process is gone is taken over.
 */
import { createHash } from 'node:crypto';
import { mkdir, realpath } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { pid } from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { FabricError } from '../../domain/errors.ts';
import { releasePidFile, takePidFile } from '../process/pid-file.ts';
import { pidState } from '../process/process-liveness.ts';

/** Who holds a workspace. */
export interface WorkspaceHolder {
  readonly run_id: string;
  readonly pid: number;
  readonly host: string;
  readonly since: string;
}

/** A held workspace; `release` is idempotent. */
export interface WorkspaceLease {
  readonly workspace: string;
  release(): Promise<void>;
}

export interface WorkspaceLockOptions {
  /** Wait for the holder to finish (default), or refuse at once with `workspace_busy`. */
  readonly wait: boolean;
  /** Aborting stops the wait with `run_cancelled`. */
  readonly signal: AbortSignal;
  /** Told once, when the run has to wait, who holds the workspace. */
  readonly onWait?: (holder: WorkspaceHolder) => void;
  /** Where the lock files are; default `<tmpdir>/agent-fabric-locks`. */
  readonly lockDir?: string;
  /** How often a waiting run looks again at another process's lock. Default 250 ms. */
  readonly pollMs?: number;
}

/** Runs of this process on one workspace: the holder, and the chain each newcomer waits on. */
interface Slot {
  chain: Promise<void>;
  /** Runs holding or waiting. */
  count: number;
  holder: WorkspaceHolder | undefined;
}

const slots = new Map<string, Slot>();

/** Takes the workspace for `runId`, waiting for (or refusing) a run that holds it. */
export async function lockWorkspace(
  workspace: string,
  runId: string,
  options: WorkspaceLockOptions,
): Promise<WorkspaceLease> {
  const real = await realpath(workspace).catch(() => path.resolve(workspace));
  const file = path.join(
    options.lockDir ?? path.join(tmpdir(), 'agent-fabric-locks'),
    `${createHash('sha256').update(real).digest('hex').slice(0, 32)}.lock`,
  );
  let told = false;
  const tell = (holder: WorkspaceHolder | undefined): void => {
    if (!told && holder !== undefined) options.onWait?.(holder);
    told = true;
  };
  // In this process: queue behind the runs before, in order.
  const slot = slots.get(real) ?? { chain: Promise.resolve(), count: 0, holder: undefined };
  if (slot.count > 0 && !options.wait) throw busy(real, slot.holder);
  slots.set(real, slot);
  slot.count += 1;
  const before = slot.chain;
  let done: () => void = () => {};
  const mine = new Promise<void>((resolve) => {
    done = resolve;
  });
  slot.chain = before.then(() => mine);
  const leave = (): void => {
    done();
    slot.count -= 1;
    if (slot.count === 0 && slots.get(real) === slot) slots.delete(real);
  };
  const holder: WorkspaceHolder = { run_id: runId, pid, host: hostname(), since: new Date().toISOString() };
  try {
    if (slot.count > 1) {
      tell(slot.holder);
      await abortable(before, options.signal, real);
    }
    // Across processes: the lock file.
    await mkdir(path.dirname(file), { recursive: true });
    for (;;) {
      const attempt = await takePidFile(file, JSON.stringify(holder), {
        attempts: Number.POSITIVE_INFINITY,
        holder: liveHolder,
      });
      if (attempt.taken) break;
      if (!options.wait) throw busy(real, attempt.holder);
      tell(attempt.holder);
      await abortable(sleep(options.pollMs ?? 250), options.signal, real);
    }
    slot.holder = holder;
  } catch (error) {
    leave();
    throw error;
  }
  let released = false;
  return {
    workspace: real,
    async release() {
      if (released) return;
      released = true;
      slot.holder = undefined;
      await releasePidFile(file);
      leave();
    },
  };
}

/** The holder the lock file names, unless its process is gone; `undefined` when it is stale. */
function liveHolder(text: string): WorkspaceHolder | undefined {
  const holder = readHolder(text);
  return holder === undefined || isGone(holder) ? undefined : holder;
}

function readHolder(text: string): WorkspaceHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<WorkspaceHolder>;
    if (typeof value.pid !== 'number' || typeof value.host !== 'string') return undefined;
    return {
      run_id: String(value.run_id ?? '?'),
      pid: value.pid,
      host: value.host,
      since: String(value.since ?? ''),
    };
  } catch {
    // Being written right now, or garbage: looked at again on the next round.
    return { run_id: '?', pid, host: '', since: '' };
  }
}

/** A holder on this host whose process no longer exists. */
function isGone(holder: WorkspaceHolder): boolean {
  if (holder.host !== hostname() || holder.pid === pid) return false;
  return pidState(holder.pid) === 'gone';
}

function busy(workspace: string, holder: WorkspaceHolder | undefined): FabricError {
  const who =
    holder === undefined ? 'another run' : `run ${holder.run_id} (process ${holder.pid} on ${holder.host})`;
  return new FabricError(
    'workspace_busy',
    `The workspace ${workspace} is in use by ${who}; two runs never write one workspace at once. ` +
      'Wait for it to end, run in another workspace, or let this run wait its turn.',
    { details: { workspace, holder } },
  );
}

async function abortable(promise: Promise<unknown>, signal: AbortSignal, workspace: string): Promise<void> {
  const cancelled = () =>
    new FabricError('run_cancelled', `Cancelled while waiting for the workspace ${workspace}.`, {
      cause: signal.reason,
    });
  if (signal.aborted) throw cancelled();
  let onAbort: () => void = () => {};
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([promise, stopped]);
  } catch (error) {
    if (signal.aborted) throw cancelled();
    throw error;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
