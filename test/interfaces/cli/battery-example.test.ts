import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compositorResponder } from '../../support/battery-fakes.ts';
import { ROOT, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const CODER = 'qwen/qwen3-coder-30b';
const DEVSTRAL = 'mistralai/devstral-small-2507';
const EXAMPLE = join(ROOT, 'examples/compositor-battery.yaml');
const CRATE_FILES = ['Cargo.toml', 'Cargo.lock', 'src/lib.rs', 'src/region.rs', 'src/geometry.rs'];

let sandbox: Sandbox;
let servers: FakeLlmServer[];

beforeEach(async () => {
  sandbox = await makeSandbox({
    llm: { retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
    specialists: { rust: { builder: 'builtin:rust', description: 'rust' } },
  });
  // devstral writes a test that fails.
  const respond = compositorResponder((model) => model === DEVSTRAL);
  servers = [
    await startFakeLlmServer({ flavor: 'lm_studio', respond, models: [{ id: CODER, toolUse: true }] }),
    await startFakeLlmServer({ flavor: 'lm_studio', respond, models: [{ id: DEVSTRAL, toolUse: true }] }),
  ];
});

afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await sandbox.cleanup();
});

async function crateDigest(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of CRATE_FILES) hash.update(await readFile(join(ROOT, 'examples/compositor', file)));
  return hash.digest('hex');
}

describe('the example battery over examples/compositor (README)', () => {
  it('runs both tasks with every available model, real cargo checking each cell', async () => {
    const before = await crateDigest();
    const result = await spawnFabric(['battery', EXAMPLE, '--json', '--report', 'battery.md'], {
      env: testEnv(sandbox, servers.map((server) => server.url).join(',')),
      cwd: sandbox.dir,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const json = JSON.parse(result.stdout) as {
      cells: { task: string; model: string; passed: boolean; failed_check: string | null; error: string }[];
      models: { model: string; passed: number; total: number }[];
    };
    expect(json.models.map((m) => [m.model, m.passed, m.total]).sort()).toEqual([
      [DEVSTRAL, 0, 2],
      [CODER, 2, 2],
    ]);
    for (const cell of json.cells.filter((c) => c.model === DEVSTRAL)) {
      expect(cell.failed_check).toBe('command: cargo test');
      // The first line (what the terminal and the report show) names the test, where it panicked
      // and the assertion with left and right (issue 20: it read `panicked at src/region.rs:82:9:;`).
      expect(cell.error?.split('\n')[0]).toMatch(
        /^exit 101: \w+::tests::\w+ panicked at src\/\w+\.rs:\d+:\d+: assertion `left == right` failed: wrong on purpose, left: 4, right: 5; \d+ passed; 1 failed$/,
      );
      expect(cell.error).toContain(
        'assertion `left == right` failed: wrong on purpose\n    left: 4\n   right: 5',
      );
      expect(cell.error).toMatch(/\ntest result: FAILED\. \d+ passed; 1 failed;/);
    }
    expect(result.stderr).toMatch(
      /✗ region-contains × mistralai\/devstral-small-2507 · command: cargo test: exit 101: region::tests::\w+ panicked at src\/region\.rs:\d+:\d+: assertion `left == right` failed: wrong on purpose, left: 4, right: 5;/,
    );
    const report = await readFile(join(sandbox.dir, 'battery.md'), 'utf8');
    expect(report).toContain('| region-contains |');
    expect(report).toContain('command: cargo test');
    // Each failure's summary once, its detail below it as a block, not folded into it again.
    const bullet = report.split('\n').find((line) => line.startsWith('- **region-contains** × `mistralai'));
    expect(bullet).toMatch(/: command: cargo test — exit 101: .* 1 failed \(run `[\w-]+`\)$/);
    expect(report).toContain('  ```\n  region::tests::');
    // Every cell worked in its own copy: the example crate is as it was.
    expect(await crateDigest()).toBe(before);
  });
});
