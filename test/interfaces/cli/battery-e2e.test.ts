import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { BatteryState } from '../../../src/application/battery/battery-types.ts';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { EXAMPLE_PACK, makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';
const NO_TOOLS = 'lab/chatty-3b';
const GHOST = 'lab/ghost-1b';

let sandbox: Sandbox;
let servers: FakeLlmServer[];
let workspace: string;

/** alpha converts everything; beta never finishes the feet task. */
const responder = unitsResponder((model, task) =>
  model === BETA && task.includes('feet') ? 'never_finishes' : 'converts',
);

beforeEach(async () => {
  sandbox = await makeSandbox({
    // A probe that times out on a busy machine would make a model look missing.
    llm: { retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
    specialists: {
      units: {
        builder: `${EXAMPLE_PACK}#buildPack`,
        description: 'unit conversions',
        sandbox: { allowed_commands: ['grep'], timeout_s: 30 },
      },
    },
  });
  // alpha is loaded on the first server, beta on the second; each lists the other unloaded.
  servers = [
    await startFakeLlmServer({
      flavor: 'lm_studio',
      respond: responder,
      models: [
        { id: ALPHA, toolUse: true, loaded: true },
        { id: BETA, toolUse: true, loaded: false },
      ],
    }),
    // LM Studio >= 0.4 says outright that a model was not trained for tool use.
    await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      respond: responder,
      models: [
        { id: BETA, toolUse: true, loaded: true },
        { id: ALPHA, toolUse: true, loaded: false },
        { id: NO_TOOLS, toolUse: false, loaded: true },
      ],
    }),
  ];
  workspace = join(sandbox.dir, 'ws');
  await mkdir(join(workspace, '.git'), { recursive: true });
  await mkdir(join(workspace, 'docs'), { recursive: true });
  await writeFile(join(workspace, 'notes.txt'), 'distances in km\n');
  await writeFile(join(workspace, 'docs', 'units.md'), '# units\n');
  await writeFile(join(workspace, '.git', 'HEAD'), 'ref: refs/heads/main\n');
});

afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await sandbox.cleanup();
});

async function writeBattery(fields: Record<string, unknown>, name = 'battery.yaml'): Promise<string> {
  const path = join(sandbox.dir, name);
  await writeFile(
    path,
    stringify({
      name: 'units-basics',
      specialist: 'units',
      workspace: './ws',
      models: [ALPHA, BETA],
      tasks: [
        {
          id: 'km-to-mi',
          task: 'Convert 3 km to miles',
          expect: {
            status: 'succeeded',
            commands: ['grep -q km notes.txt'],
            files_contain: { 'notes.txt': 'km' },
          },
        },
        { id: 'ft-to-m', task: 'Convert 10 feet to metres', expect: { status: 'succeeded' } },
      ],
      ...fields,
    }),
  );
  return path;
}

function battery(args: string[], extraEnv: Record<string, string> = {}) {
  return spawnFabric(['battery', ...args], {
    env: testEnv(sandbox, servers.map((server) => server.url).join(','), extraEnv),
    cwd: sandbox.dir,
  });
}

async function treeDigest(root: string): Promise<string> {
  const hash = createHash('sha256');
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) hash.update(`${file}\0`).update(await readFile(file));
  return hash.digest('hex');
}

async function readState(id: string): Promise<BatteryState> {
  return JSON.parse(await readFile(join(sandbox.runsDir, 'batteries', `${id}.json`), 'utf8')) as BatteryState;
}

async function runlogEvent(runId: string, kind: string): Promise<Record<string, unknown>> {
  const lines = (await readFile(join(sandbox.runsDir, runId, 'runlog.jsonl'), 'utf8')).trim().split('\n');
  const events = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return events.find((event) => event.kind === kind)!;
}

const runEnd = (runId: string) => runlogEvent(runId, 'run_end');

interface JsonCell {
  task: string;
  model: string;
  repeat: number;
  status: string;
  passed: boolean;
  failed_check: string | null;
  error: string | null;
  run_id: string | null;
  steps: number;
  tokens: number;
  seconds: number;
}

describe('fabric battery over two LM Studio servers', () => {
  it('runs every cell, scores them as scripted, and sends each model to the server where it is loaded', async () => {
    const file = await writeBattery({ models: [ALPHA, BETA, NO_TOOLS], max_steps: 3 });
    const before = await treeDigest(workspace);
    const result = await battery([file, '--json', '--report', 'report.md', '--concurrency', '2']);
    expect(result.stderr).toMatch(/battery bat-\S+ · units-basics/);
    expect(result.exitCode).toBe(0);
    const json = JSON.parse(result.stdout) as {
      id: string;
      name: string;
      cells: JsonCell[];
      models: unknown[];
    };
    expect(json.name).toBe('units-basics');
    expect(result.stderr).toContain(json.id);
    const cell = (task: string, model: string) =>
      json.cells.find((c) => c.task === task && c.model === model)!;
    expect(json.cells).toHaveLength(6);

    expect(cell('km-to-mi', ALPHA)).toMatchObject({
      status: 'succeeded',
      passed: true,
      failed_check: null,
      repeat: 1,
    });
    expect(cell('ft-to-m', ALPHA)).toMatchObject({ status: 'succeeded', passed: true });
    expect(cell('km-to-mi', BETA)).toMatchObject({ status: 'succeeded', passed: true });
    expect(cell('ft-to-m', BETA)).toMatchObject({
      status: 'max_steps',
      passed: false,
      failed_check: 'status',
    });
    expect(cell('ft-to-m', BETA).error).toContain('expected succeeded');
    for (const task of ['km-to-mi', 'ft-to-m']) {
      // A model without tools fails its own cells (a missing one is refused before any cell runs).
      expect(cell(task, NO_TOOLS)).toMatchObject({ infrastructure: false });
      expect(cell(task, NO_TOOLS)).toMatchObject({ status: 'not_run', passed: false, run_id: null });
      expect(cell(task, NO_TOOLS).error).toContain('cannot call tools');
    }
    expect(json.models).toEqual([
      expect.objectContaining({ model: ALPHA, passed: 2, total: 2, pass_rate: 1 }),
      expect.objectContaining({ model: BETA, passed: 1, total: 2, pass_rate: 0.5 }),
      expect.objectContaining({ model: NO_TOOLS, passed: 0, total: 2, pass_rate: 0 }),
    ]);

    // Every request for a model went to the server that has it loaded.
    const [first, second] = servers as [FakeLlmServer, FakeLlmServer];
    const modelsAsked = (server: FakeLlmServer) =>
      new Set(server.chatRequests().map((r) => (r.body as { model: string }).model));
    expect([...modelsAsked(first)]).toEqual([ALPHA]);
    expect([...modelsAsked(second)]).toEqual([BETA]);

    // The JSON agrees with the runlogs.
    for (const c of json.cells.filter((c) => c.run_id !== null)) {
      const end = await runEnd(c.run_id!);
      expect(end.status).toBe(c.status);
      expect((end.usage as { total_tokens: number }).total_tokens).toBe(c.tokens);
      // Each cell's run says which battery and cell it was.
      expect((await runlogEvent(c.run_id!, 'run_start')).tags).toEqual({
        battery: json.id,
        task: c.task,
        model: c.model,
        repeat: String(c.repeat),
      });
    }
    // So does the report: the matrix, per model, and each failure's check and message.
    const report = await readFile(join(sandbox.dir, 'report.md'), 'utf8');
    expect(report).toContain(`# Battery units-basics`);
    expect(report).toContain(`| ${ALPHA} | 2/2 (100%) |`);
    expect(report).toContain(`| ${BETA} | 1/2 (50%) |`);
    expect(report).toMatch(
      new RegExp(`\\*\\*ft-to-m\\*\\* × \`${BETA}\`: status — expected succeeded, the run ended max_steps`),
    );
    expect(report).toContain(cell('ft-to-m', BETA).run_id!);

    // The original workspace was only read.
    expect(await treeDigest(workspace)).toBe(before);

    // At most two cells at once, each from its run's start to the end of its checks.
    const state = await readState(json.id);
    expect(state.status).toBe('done');
    const intervals = state.cells.map((c) => [Date.parse(c.started_at), Date.parse(c.ended_at)] as const);
    const overlap = Math.max(
      ...intervals.map(([start]) => intervals.filter(([s, e]) => s <= start && start < e).length),
    );
    expect(overlap).toBeLessThanOrEqual(2);
  });

  it('resumes an interrupted battery: only the cells not done run, under the same id', async () => {
    servers = await Promise.all(servers.map((server) => server.stop())).then(async () => [
      await startFakeLlmServer({
        flavor: 'lm_studio',
        respond: unitsResponder(() => 'converts', { delayMs: 150 }),
        models: [{ id: ALPHA, toolUse: true }],
      }),
      await startFakeLlmServer({
        flavor: 'lm_studio',
        respond: unitsResponder(() => 'converts', { delayMs: 150 }),
        models: [{ id: BETA, toolUse: true }],
      }),
    ]);
    const file = await writeBattery({});
    const first = battery([file, '--concurrency', '1']);
    let id: string | undefined;
    first.stderr?.on('data', (chunk: Buffer) => {
      id ??= /battery (bat-\S+)/.exec(chunk.toString())?.[1];
    });
    // Ctrl-C once the first cell is recorded.
    for (let i = 0; i < 300; i++) {
      if (id !== undefined) {
        const state = await readState(id).catch(() => undefined);
        if (state !== undefined && state.cells.length >= 1) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    first.kill('SIGINT');
    const interrupted = await first;
    expect(interrupted.exitCode).toBe(130);
    expect(interrupted.stderr).toContain(`fabric battery --resume ${id}`);
    const stopped = await readState(id!);
    expect(stopped.status).toBe('interrupted');
    const done = stopped.cells.length;
    expect(done).toBeGreaterThanOrEqual(1);
    expect(done).toBeLessThan(4);
    const runsBefore = await runIds();

    const resumed = await battery(['--resume', id!, '--json']);
    expect(resumed.exitCode).toBe(0);
    const json = JSON.parse(resumed.stdout) as { id: string; cells: JsonCell[] };
    expect(json.id).toBe(id);
    expect(json.cells).toHaveLength(4);
    expect(json.cells.every((c) => c.passed)).toBe(true);
    // The cells done before Ctrl-C kept their runs; only the others ran.
    for (const before of stopped.cells) {
      expect(json.cells.find((c) => c.task === before.task && c.model === before.model)?.run_id).toBe(
        before.run_id,
      );
    }
    const newRuns = (await runIds()).filter((run) => !runsBefore.includes(run));
    expect(newRuns.sort()).toEqual(
      json.cells
        .filter((c) => !stopped.cells.some((b) => b.task === c.task && b.model === c.model))
        .map((c) => c.run_id)
        .sort(),
    );
    expect((await readState(id!)).status).toBe('done');
  });

  it('refuses a model no answering server lists before any cell runs (exit 4), from --models or the file', async () => {
    const typo = 'lab/alpah-7b';
    const flagged = await battery([await writeBattery({}), '--models', `${ALPHA},${typo}`]);
    expect(flagged.exitCode, flagged.stderr).toBe(4);
    expect(flagged.stderr).toContain(
      `The battery names 1 model (from --models) that no answering server lists, so no cell ran: "${typo}" (did you mean "${ALPHA}"?).`,
    );
    // What each server offers, and the fix.
    expect(flagged.stderr).toMatch(new RegExp(`lm_studio http://127\\.0\\.0\\.1:\\d+: ${ALPHA}, ${BETA}`));
    expect(flagged.stderr).toMatch(/ollama http:\/\/127\.0\.0\.1:9: unreachable/);
    expect(flagged.stderr).toContain('lms load');
    const fromFile = await battery([await writeBattery({ models: [GHOST, BETA] })]);
    expect(fromFile.exitCode, fromFile.stderr).toBe(4);
    expect(fromFile.stderr).toMatch(
      /names 1 model \(from \S+battery\.yaml\) that no answering server lists, so no cell ran: "lab\/ghost-1b"\./,
    );
    expect(servers.flatMap((server) => server.chatRequests())).toHaveLength(0);
    expect(await runIds()).toEqual([]);
    await expect(readdir(join(sandbox.runsDir, 'batteries'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a file that does not fit (exit 2), naming the field and line, and runs nothing', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ specialist: 'nobody' }, /line 2: specialist: no specialist "nobody"/],
      [
        { workspace: './missing' },
        /line 3: workspace: .*missing does not exist \(paths are relative to the battery file\)/,
      ],
      [
        { tasks: [{ id: 'a', task: 'x', expect: { commands: ['rm -rf notes.txt'] } }] },
        /line \d+: tasks\[0\]\.expect\.commands\[0\]: .*specialist "units" allows: grep/,
      ],
      [
        {
          tasks: [
            { id: 'a', task: 'x' },
            { id: 'a', task: 'y' },
          ],
        },
        /line \d+: tasks\[1\]\.id: "a" is already the id of tasks\[0\]/,
      ],
      [{ repeat: 0 }, /line \d+: repeat: expected >=1, found 0/],
    ];
    for (const [fields, message] of cases) {
      const result = await battery([await writeBattery(fields)]);
      expect(result.stderr).toMatch(message);
      expect(result.exitCode).toBe(2);
    }
    await writeFile(join(sandbox.dir, 'broken.yaml'), 'name: x\ntasks: [\n');
    const broken = await battery([join(sandbox.dir, 'broken.yaml')]);
    expect(broken.exitCode).toBe(2);
    expect(broken.stderr).toMatch(/broken\.yaml: invalid battery file \(nothing was run\):\n {2}- line \d+:/);
    // One missing `]` makes the parser report every line after it: only the first error is
    // shown, with its excerpt, as for fabric.yaml.
    await writeFile(
      join(sandbox.dir, 'bracket.yaml'),
      'name: x\nspecialist: units\nmodels: [a]\ntasks: [\n  { id: a, task: "x", expect: { commands: [grep -q km notes.txt } },\n  { id: b, task: "y" }\n]\n',
    );
    const bracket = await battery([join(sandbox.dir, 'bracket.yaml')]);
    expect(bracket.exitCode).toBe(2);
    const problems = bracket.stderr.split('\n').filter((line) => line.startsWith('  - '));
    expect(problems).toEqual([
      expect.stringMatching(
        /^ {2}- line 5: Flow sequence .* end with a \] at line 5, column \d+ \(the first of \d+ YAML errors; fix it and run again\):$/,
      ),
    ]);
    expect(bracket.stderr).toContain(
      '      { id: a, task: "x", expect: { commands: [grep -q km notes.txt } },\n',
    );
    expect(bracket.stderr).toMatch(/^ {7,}\^$/m);
    expect(servers.flatMap((server) => server.chatRequests())).toHaveLength(0);
    expect(await runIds()).toEqual([]);
  });

  it('reports all the problems of a file at once, each with its line, in one error, and runs nothing', async () => {
    const file = await writeBattery({
      specialist: 'unit',
      tasks: [
        { id: 'a', task: 'x' },
        { id: 'a', task: 'y', expct: { status: 'succeeded' } },
      ],
    });
    const result = await battery([file]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(`fabric battery: ${file}: invalid battery file (nothing was run):\n`);
    const problems = result.stderr.split('\n').filter((line) => line.startsWith('  - '));
    expect(problems).toEqual([
      expect.stringMatching(
        /^ {2}- line 2: specialist: no specialist "unit" in \S+fabric\.yaml \(configured: units\)\. Did you mean "units"\?$/,
      ),
      expect.stringMatching(
        /^ {2}- line \d+: tasks\[1\]\.id: "a" is already the id of tasks\[0\]; task ids must be unique$/,
      ),
      expect.stringMatching(/^ {2}- line \d+: tasks\[1\]\.expct: unknown key\. Did you mean "expect"\?$/),
    ]);
    expect(servers.flatMap((server) => server.chatRequests())).toHaveLength(0);
    expect(await runIds()).toEqual([]);
  });

  it('reports the checks against the config (workspace, allowed commands) with the file’s own problems', async () => {
    // Issue 20: a missing workspace and a command outside the sandbox came only after the
    // duplicate id and the unknown key were fixed, in a second round.
    const file = await writeBattery({
      workspace: './missing',
      repet: 2,
      tasks: [
        { id: 'a', task: 'x', expect: { commands: ['rm -rf notes.txt'] } },
        { id: 'a', task: 'y' },
      ],
    });
    const result = await battery([file]);
    expect(result.exitCode).toBe(2);
    const problems = result.stderr.split('\n').filter((line) => line.startsWith('  - '));
    expect(problems).toEqual([
      expect.stringMatching(/^ {2}- line 3: workspace: \S+missing does not exist \(paths are relative/),
      expect.stringMatching(
        /^ {2}- line \d+: tasks\[0\]\.expect\.commands\[0\]: .*specialist "units" allows: grep/,
      ),
      expect.stringMatching(/^ {2}- line \d+: tasks\[1\]\.id: "a" is already the id of tasks\[0\]/),
      expect.stringMatching(/^ {2}- line \d+: repet: unknown key\. Did you mean "repeat"\?$/),
    ]);
    expect(await runIds()).toEqual([]);
  });

  it("takes the commands policy allow rules name as the model's shell does (SPEC §19)", async () => {
    const config = parse(await readFile(sandbox.configPath, 'utf8')) as Record<string, unknown>;
    await writeFile(
      sandbox.configPath,
      stringify({ ...config, policy: { rules: [{ tool: 'shell', command: 'wc -l', decision: 'allow' }] } }),
    );
    const file = await writeBattery({
      repet: 2,
      tasks: [{ id: 'a', task: 'x', expect: { commands: ['wc -l notes.txt', 'wc -c notes.txt'] } }],
    });
    const result = await battery([file]);
    expect(result.exitCode).toBe(2);
    const problems = result.stderr.split('\n').filter((line) => line.startsWith('  - '));
    // `wc -l` is allowed by the rule; `wc -c` is not, and the allowed commands named include the rule's.
    expect(problems).toEqual([
      expect.stringMatching(/^ {2}- line \d+: tasks\[0\]\.expect\.commands\[1\]: .*allows: grep, wc -l/),
      expect.stringMatching(/^ {2}- line \d+: repet: unknown key/),
    ]);
  });

  it('takes `--models available`: every tool-capable model the servers have', async () => {
    const file = await writeBattery({ tasks: [{ id: 'km', task: 'Convert 3 km to miles' }] });
    const result = await battery([file, '--models', 'available', '--json']);
    expect(result.exitCode).toBe(0);
    const json = JSON.parse(result.stdout) as { models: { model: string; passed: number }[] };
    expect(json.models.map((m) => m.model).sort()).toEqual([ALPHA, BETA]);
    expect(json.models.every((m) => m.passed === 1)).toBe(true);
  });

  it('explains itself with --help', async () => {
    const result = await battery(['--help']);
    expect(result.exitCode).toBe(0);
    for (const flag of ['--models', '--concurrency', '--resume', '--json', '--report', 'files_contain']) {
      expect(result.stdout).toContain(flag);
    }
  });
});

async function runIds(): Promise<string[]> {
  const entries = await readdir(sandbox.runsDir, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isDirectory() && entry.name !== 'batteries')
    .map((entry) => entry.name);
}
