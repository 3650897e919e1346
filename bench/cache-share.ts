/**
 * Prompt-cache share (SPEC §15, §17): a 20-step run whose last turn is the finish-only one,
 * against a scripted server that keeps one cached prompt per server (a slot) and reuses the
 * longest prefix a new request shares with it. The figure is the share of prompt text served from
 * cache against the best possible: every request reusing all of the run's previous request (as
 * much of it as the request is long). On one server, and with the model loaded on two (a run that
 * changed servers, or a final turn that changed the tool list, loses the prefix); and a 40-step
 * rust run on a model loaded at 8k whose reads total several times the window, so that it must
 * compact (each compaction loses the prefix after the first message it changes).
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type FakeLlmServer,
  type ScriptedTurn,
  startFakeLlmServer,
} from '../test/support/fake-llm-server.ts';
import { spawnFabric } from '../test/support/fabric-cli.ts';
import { benchEnv, openFabric, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
import { measureSlots } from './cache-slots.ts';
import { fmt, printTable } from './support/stats.ts';
import { MODEL_ID, TASK, unitsScript } from './support/units-script.ts';

const STEPS = 20;

/** The prompt a server's template would see: the tools first, then the messages. */
function rendered(body: unknown): string {
  const { tools, messages } = body as { tools?: unknown; messages?: unknown };
  return JSON.stringify({ tools, messages });
}

function sharedPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  return i;
}

interface Share {
  readonly requests: number;
  readonly prompt: number;
  readonly cached: number;
  readonly best: number;
  readonly servers: number;
  readonly finalCached: number;
  readonly finalBest: number;
}

/** Replays the run's requests, in the order they were received, through one cache slot per server. */
function cacheShare(servers: readonly FakeLlmServer[]): Share {
  const requests = servers
    .flatMap((server, index) => server.chatRequests().map((request) => ({ index, request })))
    .sort((a, b) => a.request.receivedAt - b.request.receivedAt);
  const slots = new Map<number, string>();
  let previous: string | undefined;
  let prompt = 0;
  let cached = 0;
  let best = 0;
  let last = { cached: 0, best: 0 };
  for (const { index, request } of requests) {
    const text = rendered(request.body);
    const hit = sharedPrefix(slots.get(index) ?? '', text);
    const possible = previous === undefined ? 0 : Math.min(previous.length, text.length);
    prompt += text.length;
    cached += hit;
    best += possible;
    last = { cached: hit, best: possible };
    slots.set(index, text);
    previous = text;
  }
  return {
    requests: requests.length,
    prompt,
    cached,
    best,
    servers: new Set(requests.map((r) => r.index)).size,
    finalCached: last.cached,
    finalBest: last.best,
  };
}

async function measure(serverCount: number): Promise<Share> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-cache-'));
  const servers = await Promise.all(
    Array.from({ length: serverCount }, () =>
      startFakeLlmServer({ flavor: 'lm_studio', models: [{ id: MODEL_ID, toolUse: true }] }),
    ),
  );
  try {
    // One step short of the script, so the last request is the finish-only final turn.
    const configPath = await writeConfig(
      dir,
      unitsConfig({ control: { enabled: false }, loop: { max_steps: STEPS - 1 } }),
    );
    const env = benchEnv(servers.map((server) => server.url).join(','), join(dir, 'runs'));
    const fabric = await openFabric(configPath, env, dir);
    try {
      for (const server of servers) server.push(...unitsScript(STEPS));
      const result = await fabric.run(TASK);
      if (result.status !== 'max_steps' || result.steps !== STEPS)
        throw new Error(
          `bench: the run ended ${result.status} after ${result.steps} steps, expected max_steps after ${STEPS}`,
        );
      return cacheShare(servers);
    } finally {
      await fabric.close();
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await rm(dir, { recursive: true, force: true });
  }
}

/** Where the resume case's `fabric run` is killed: while its turn after this step streams. */
const KILL_AFTER = 10;

/**
 * The 20-step run as a user lives it (SPEC §18): `fabric run` SIGKILLed while the model writes its
 * turn after step 10, then `fabric resume` on the same server. The hung turn is a request too, so
 * the figure counts what the kill cost the cache: the resumed request should be served from the
 * slot the killed one left (its prefix), and nothing recorded asked again.
 */
async function measureResumed(): Promise<Share> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-cache-'));
  const server = await startFakeLlmServer({ flavor: 'lm_studio', models: [{ id: MODEL_ID, toolUse: true }] });
  const script = unitsScript(STEPS);
  server.push(...script.slice(0, KILL_AFTER), { hang: true }, ...script.slice(KILL_AFTER));
  try {
    const configPath = await writeConfig(
      dir,
      unitsConfig({ control: { enabled: false }, loop: { max_steps: STEPS - 1 } }),
    );
    const env = benchEnv(server.url, join(dir, 'runs'));
    const options = { env, cwd: dir, build: true };
    const run = spawnFabric(['run', '--config', configPath, '--specialist', 'units', TASK], options);
    let exited = false;
    void run.then(() => {
      exited = true;
    });
    while (server.chatRequests().length <= KILL_AFTER) {
      if (exited) throw new Error(`bench: fabric run ended before its turn after step ${KILL_AFTER}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    run.kill('SIGKILL');
    await run;
    const [runId] = (await readdir(join(dir, 'runs'))).filter((name) => !name.startsWith('.'));
    if (runId === undefined) throw new Error('bench: the killed run left no runs directory entry');
    const resumed = await spawnFabric(['resume', '--config', configPath, runId, '--json'], options);
    const result = JSON.parse(String(resumed.stdout)) as { status?: string; steps?: number };
    if (result.status !== 'max_steps' || result.steps !== STEPS)
      throw new Error(
        `bench: the resumed run ended ${result.status} after ${result.steps} steps, expected max_steps after ${STEPS}: ${String(resumed.stderr).slice(0, 400)}`,
      );
    return cacheShare([server]);
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const LONG_STEPS = 40;
const WINDOW = 8192;

/** A 40-step rust run of reads on a model loaded at 8k: the last step the finish-only turn. */
async function measureLong(): Promise<Share & { compactions: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-cache-'));
  const workspace = join(dir, 'ws');
  const reads: ScriptedTurn[] = [];
  await mkdir(workspace);
  for (let n = 1; n < LONG_STEPS; n += 1) {
    const lines = Array.from(
      { length: 60 + (n % 4) * 20 },
      (_, i) => `// notes ${n}.${i}: damage per output`,
    );
    await writeFile(join(workspace, `notes-${n}.txt`), lines.join('\n'));
    reads.push({ reply: { toolCalls: [{ name: 'read_file', arguments: { path: `notes-${n}.txt` } }] } });
  }
  const server = await startFakeLlmServer({
    flavor: 'lm_studio',
    lmStudioV1Api: true,
    models: [{ id: MODEL_ID, toolUse: true, contextLength: WINDOW, enforceWindow: true }],
    respond: ({ tools }) =>
      tools.length === 0 ? { reply: { content: 'Read the notes so far.' } } : undefined,
    script: [...reads, { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done' } }] } }],
  });
  try {
    const configPath = await writeConfig(dir, {
      version: 1,
      specialists: { rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'] } } },
      control: { enabled: false },
      loop: { max_steps: LONG_STEPS - 1, stuck_repeats: 100_000 },
    });
    const env = benchEnv(server.url, join(dir, 'runs'));
    const fabric = await openFabric(configPath, env, dir, { specialist: 'rust', workspace });
    try {
      const result = await fabric.run('Read the notes, one file a step.');
      if (result.status !== 'max_steps' || result.steps !== LONG_STEPS)
        throw new Error(
          `bench: the long run ended ${result.status} after ${result.steps} steps, expected max_steps after ${LONG_STEPS}`,
        );
      const compactions = (await readFile(result.runlog, 'utf8'))
        .split('\n')
        .filter((line) => line.includes('"kind":"compaction"')).length;
      return { ...cacheShare([server]), compactions };
    } finally {
      await fabric.close();
    }
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const cases: [string, () => Promise<Share & { compactions?: number }>][] = [
  ['one server, 20 steps', () => measure(1)],
  ['model loaded on two servers, 20 steps', () => measure(2)],
  [`20 steps, fabric run killed after step ${KILL_AFTER}, fabric resume`, measureResumed],
  [`${LONG_STEPS}-step rust run, model loaded at ${WINDOW / 1024}k`, measureLong],
];
const rows: string[][] = [];
for (const [name, run] of cases) {
  const share = await run();
  rows.push([
    name,
    String(share.requests),
    String(share.servers),
    String(share.compactions ?? 0),
    fmt(share.prompt / 1000),
    fmt(share.cached / 1000),
    fmt(share.best / 1000),
    `${fmt(share.cached / share.best)}`,
    `${fmt(share.finalCached / Math.max(1, share.finalBest))}`,
  ]);
}
printTable(
  'Prompt cache: runs whose last turn is the finish-only one, one cache slot per server (targets: ≥ 0.95 without compaction, ≥ 0.85 with)',
  [
    'case',
    'requests',
    'servers used',
    'compactions',
    'prompt k chars',
    'cached k chars',
    'best k chars',
    'share of best',
    'final turn',
  ],
  rows,
);

const slotRows: string[][] = [];
const slotCases: [string, number, boolean, boolean][] = [
  ['4 runs at once, 1 slot, scheduler off (baseline)', 1, false, false],
  ['4 runs at once, 1 slot', 1, true, false],
  ['4 runs at once, 1 slot, host prompt cache (llama-server --cache-ram)', 1, true, true],
  ['4 runs at once, 4 slots', 4, true, false],
];
for (const [name, slots, scheduler, hostCache] of slotCases) {
  const share = await measureSlots(4, slots, scheduler, hostCache);
  slotRows.push([
    name,
    String(share.requests),
    fmt(share.prompt / 1000),
    fmt(share.cached / 1000),
    fmt(share.best / 1000),
    fmt(share.cached / share.best),
    fmt(share.makespanS),
    fmt(share.bestMakespanS),
  ]);
}
printTable(
  "Prompt cache: 4 runs of 20 steps sharing one server's slots (targets: 1 slot ≥ 0.85 with a makespan no worse than the baseline's, 4 slots ≥ 0.90)",
  [
    'case',
    'requests',
    'prompt k chars',
    'cached k chars',
    'best k chars',
    'share of best',
    'simulated makespan s',
    'best makespan s',
  ],
  slotRows,
);
