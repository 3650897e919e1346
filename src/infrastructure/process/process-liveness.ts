/**
 * Whether a process exists on this machine: the one place that sends signal 0. The
 * run owners' liveness, the daemon's status and every pid-file lock ask here.
 */
import { kill } from 'node:process';

/** What this machine can tell of a pid: it exists, it certainly does not, or no answer. */
export type PidState = 'alive' | 'gone' | 'unknown';

/**
 * Asks with signal 0, which checks the pid without touching the process. EPERM: it exists,
 * under another user. ESRCH: no such process. Anything else (a runtime that cannot send
 * signals) cannot tell. 0 and negative pids address process groups: callers that read a pid
 * from a file check it first.
 */
export function pidState(pid: number): PidState {
  try {
    kill(pid, 0);
    return 'alive';
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ESRCH') return 'gone';
    if (code === 'EPERM') return 'alive';
    return 'unknown';
  }
}
