/** A battery's paths on this machine's file system (`BatteryPaths`). */
import { statSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { BatteryPaths } from '../../application/battery/session-ports.ts';

export const fileBatteryPaths: BatteryPaths = {
  kind(path) {
    try {
      return statSync(path).isDirectory() ? 'directory' : 'other';
    } catch {
      return 'missing';
    }
  },
  besideFile: (file, path) => resolve(dirname(file), path),
  canonical: (path) => realpath(path),
};
