import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { DENO } from './fabric-cli.ts';

/**
 * The runtimes users run the installed fabric on (SPEC §14): the Node that runs the suite (20),
 * Node 22 and 24, and Deno 2. Node 22 and 24 come from the npm package `node`, which `.ci/run`
 * installs (scripts/install-test-nodes.sh) under `FABRIC_TEST_NODES` (default
 * ~/.cache/agent-fabric/test-nodes/<line>).
 */
export interface Runtime {
  readonly name: string;
  /** The directory to put first on PATH, so `#!/usr/bin/env node` finds this Node; none for Deno. */
  readonly pathDir?: string;
  readonly kind: 'node' | 'deno';
}

export const TEST_NODES_DIR =
  process.env.FABRIC_TEST_NODES ?? join(homedir(), '.cache/agent-fabric/test-nodes');

/** The `node` binary of a Node line installed for the tests, or undefined when it is not there. */
export function testNodeBinary(line: '22' | '24'): string | undefined {
  const binary = join(TEST_NODES_DIR, line, 'node_modules/node/bin/node');
  return existsSync(binary) ? binary : undefined;
}

/**
 * Every runtime the end-to-end package tests run on. Outside CI a missing Node line is left out
 * with a note (install it with `bash scripts/install-test-nodes.sh`); in CI it is an error, so
 * the lines users run are never skipped silently there.
 */
export function userRuntimes(): Runtime[] {
  const runtimes: Runtime[] = [
    { name: `node ${process.versions.node}`, pathDir: dirname(process.execPath), kind: 'node' },
  ];
  for (const line of ['22', '24'] as const) {
    const binary = testNodeBinary(line);
    if (binary !== undefined) runtimes.push({ name: `node ${line}`, pathDir: dirname(binary), kind: 'node' });
    else if (process.env.CI)
      throw new Error(
        `Node ${line} is missing under ${TEST_NODES_DIR}: .ci/run installs it (scripts/install-test-nodes.sh)`,
      );
    else
      console.warn(
        `Node ${line} is not installed for the tests; run \`bash scripts/install-test-nodes.sh\` to test on it`,
      );
  }
  if (existsSync(DENO)) runtimes.push({ name: 'deno', kind: 'deno' });
  return runtimes;
}
