/** A battery's paths on this machine's file system (`BatteryPaths`). */
import { realpath, stat } from 'node:fs/promises';
import type { BatteryPaths } from '../../application/battery/session-ports.ts';

export const fileBatteryPaths: BatteryPaths = {
  async kind(path) {
    const info = await stat(path).catch(() => undefined);
    if (info === undefined) return 'missing';
    return info.isDirectory() ? 'directory' : 'other';
  },
  canonical: (path) => realpath(path),
};
