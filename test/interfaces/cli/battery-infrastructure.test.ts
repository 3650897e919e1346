import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const ALPHA = 'lab/alpha-7b';

let sandbox: Sandbox;
let servers: FakeLlmServer[] = [];

beforeEach(async () => {
  sandbox = await makeSandbox({
    llm: { retry: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
  });
});

afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  servers = [];
  await sandbox.cleanup();
});

interface Json {
  id: string;
  cells: { task: string; status: string; passed: boolean; infrastructure: boolean; error: string | null }[];
  models: {
    model: string;
    passed: number;
    total: number;
    pass_rate: number | null;
    infrastructure_failures: number;
  }[];
}

const TASKS = [
  { id: 'km-to-mi', task: 'Convert 3 km to miles' },
  { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
  { id: 'mi-to-km', task: 'Convert 2 miles to km' },
];

describe('a battery whose server dies', () => {
  it('keeps the failures apart from the model’s score, and --resume runs again only them', async () => {
    const converts = unitsResponder(() => 'converts');
    const dying: FakeLlmServer = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: ALPHA, toolUse: true, loaded: true }],
      respond: (request) => {
        const task = request.messages.find((m) => m.role === 'user')?.content ?? '';
        if (task.includes('feet')) {
          // The server dies while answering the second task.
          void dying.stop();
          return { ...converts(request), delayMs: 2000 };
        }
        return converts(request);
      },
    });
    servers.push(dying);
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({ name: 'units-dying', specialist: 'units', models: [ALPHA], tasks: TASKS }),
    );
    const first = await spawnFabric(['battery', file, '--json', '--concurrency', '1'], {
      env: testEnv(sandbox, dying.url),
      cwd: sandbox.dir,
    });
    expect(first.exitCode).toBe(0);
    const before = JSON.parse(first.stdout) as Json;
    expect(before.cells.map((c) => [c.task, c.passed, c.infrastructure])).toEqual([
      ['km-to-mi', true, false],
      ['ft-to-m', false, true],
      ['mi-to-km', false, true],
    ]);
    expect(before.cells[2]?.error).toMatch(/No backend has the model .*\(down\)/);
    // The model's score counts only the cell its server answered.
    expect(before.models).toEqual([
      expect.objectContaining({
        model: ALPHA,
        passed: 1,
        total: 1,
        pass_rate: 1,
        infrastructure_failures: 2,
      }),
    ]);
    expect(first.stderr).toMatch(/⚠ ft-to-m × lab\/alpha-7b · infrastructure, not counted \(3 attempts\)/);
    expect(first.stderr).toMatch(/^mi-to-km +⚠ infra$/m);

    // A server is back: --resume runs the two failed cells, not the one done.
    const back = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: ALPHA, toolUse: true, loaded: true }],
      respond: converts,
    });
    servers.push(back);
    const resumed = await spawnFabric(['battery', '--resume', before.id, '--json'], {
      env: testEnv(sandbox, back.url),
      cwd: sandbox.dir,
    });
    expect(resumed.exitCode).toBe(0);
    const asked = new Set(
      back.chatRequests().map((r) => {
        const messages = (r.body as { messages: { role: string; content: string }[] }).messages;
        return messages.find((m) => m.role === 'user')?.content;
      }),
    );
    expect([...asked].sort()).toEqual(['Convert 10 feet to metres', 'Convert 2 miles to km']);
    // The matrix shows each cell once, as it stands now.
    expect(resumed.stderr).toMatch(/^mi-to-km +✓ \d+ st$/m);
    const after = JSON.parse(resumed.stdout) as Json;
    expect(after.id).toBe(before.id);
    expect(after.cells.every((c) => c.passed && !c.infrastructure)).toBe(true);
    expect(after.models).toEqual([
      expect.objectContaining({
        model: ALPHA,
        passed: 3,
        total: 3,
        pass_rate: 1,
        infrastructure_failures: 0,
      }),
    ]);
  });
});

describe('a battery whose model has no counted cell', () => {
  it('reports no pass rate (null, shown as –), not 0%, in JSON, the terminal and both reports', async () => {
    const down = async (): Promise<FakeLlmServer> => {
      const server: FakeLlmServer = await startFakeLlmServer({
        flavor: 'lm_studio',
        models: [{ id: ALPHA, toolUse: true, loaded: true }],
        // The server dies at the first task: every cell is the infrastructure's failure.
        respond: (request) => {
          void server.stop();
          return { ...unitsResponder(() => 'converts')(request), delayMs: 2000 };
        },
      });
      servers.push(server);
      return server;
    };
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({ name: 'units-down', specialist: 'units', models: [ALPHA], tasks: TASKS }),
    );

    const json = await spawnFabric(['battery', file, '--json', '--report', 'report.html'], {
      env: testEnv(sandbox, (await down()).url),
      cwd: sandbox.dir,
    });
    expect(json.exitCode, json.stderr).toBe(0);
    const summary = JSON.parse(json.stdout) as Json;
    expect(summary.cells.every((cell) => cell.infrastructure)).toBe(true);
    expect(summary.models).toEqual([
      expect.objectContaining({
        model: ALPHA,
        passed: 0,
        total: 0,
        pass_rate: null,
        infrastructure_failures: 3,
      }),
    ]);
    const page = await readFile(join(sandbox.dir, 'report.html'), 'utf8');
    expect(page).toMatch(/data-figure="pass-rate">–</);
    expect(page).not.toMatch(/>0%</);

    const text = await spawnFabric(['battery', file, '--report', 'report.md'], {
      env: testEnv(sandbox, (await down()).url),
      cwd: sandbox.dir,
    });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/lab\/alpha-7b: 0\/0 passed · pass@1 – \(95% CI –\)/);
    const report = await readFile(join(sandbox.dir, 'report.md'), 'utf8');
    expect(report).toMatch(/\| lab\/alpha-7b \| 0\/0 \(–\) \|/);
    expect(report).not.toMatch(/0%/);
  });
});
