import type { Clock } from '../application/ports.ts';

/** The system clock: the `Clock` port as the wall clock tells it. Tests pass their own. */
export const systemClock: Clock = { now: () => new Date() };
