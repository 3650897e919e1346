import type { Clock } from '../ports.ts';

/** A run id that sorts by start time: `20261122T055512Z-3f9a1c`. */
export function newRunId(clock: Clock): string {
  const stamp = clock
    .now()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${crypto.randomUUID().replace(/-/g, '').slice(0, 6)}`;
}
