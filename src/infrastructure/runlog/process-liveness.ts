import { hostname, uptime } from 'node:os';
import type { ProcessLiveness, RunOwner } from '../../application/runs/liveness-ports.ts';
import { pidState } from '../process/process-liveness.ts';

/**
 * How much earlier than the computed boot time a run must have started to count as started
 * before the boot: the boot time is derived from the uptime and the wall clock, both coarse.
 */
const BOOT_SLACK_MS = 60_000;

/** Where the adapter runs; given in tests, read from the machine otherwise. */
export interface LocalProcessLivenessOptions {
  readonly host?: string;
  readonly bootedAt?: Date;
}

/**
 * Checks a run's owner on this machine by its pid (`pidState`). An owner on another host cannot
 * be checked from here: `'unknown'`. A run that started before this machine last booted is gone
 * whatever now holds its pid.
 */
export class LocalProcessLiveness implements ProcessLiveness {
  readonly host: string;
  readonly #bootedAt: number;

  constructor(options: LocalProcessLivenessOptions = {}) {
    this.host = options.host ?? hostname();
    this.#bootedAt = options.bootedAt?.getTime() ?? Date.now() - uptime() * 1000;
  }

  isOwnerAlive(owner: RunOwner, startedAt: Date): boolean | 'unknown' {
    if (owner.host !== this.host) return 'unknown';
    // 0 and negative pids address process groups, not a process.
    if (!Number.isInteger(owner.pid) || owner.pid <= 0) return 'unknown';
    if (startedAt.getTime() < this.#bootedAt - BOOT_SLACK_MS) return false;
    const state = pidState(owner.pid);
    // A runtime that cannot send signal 0 cannot tell.
    return state === 'unknown' ? 'unknown' : state === 'alive';
  }
}
