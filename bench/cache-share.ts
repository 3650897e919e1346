/**
 * Prompt-cache share (SPEC §15, §17): a 20-step run whose last turn is the finish-only one,
 * against a scripted server that keeps one cached prompt per server (a slot) and reuses the
 * longest prefix a new request shares with it. The figure is the share of prompt text served from
 * cache against the best possible: every request reusing all of the run's previous request. On one
 * server, and with the model loaded on two (a run that changed servers, or a final turn that
 * changed the tool list, loses the prefix).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeLlmServer, startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { benchEnv, openFabric, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
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
    const possible = previous === undefined ? 0 : sharedPrefix(previous, text);
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

const cases: [string, number][] = [
  ['one server', 1],
  ['model loaded on two servers', 2],
];
const rows: string[][] = [];
for (const [name, count] of cases) {
  const share = await measure(count);
  rows.push([
    name,
    String(share.requests),
    String(share.servers),
    fmt(share.prompt / 1000),
    fmt(share.cached / 1000),
    fmt(share.best / 1000),
    `${fmt(share.cached / share.best)}`,
    `${fmt(share.finalCached / Math.max(1, share.finalBest))}`,
  ]);
}
printTable(
  `Prompt cache: a ${STEPS}-step run (the last the finish-only turn), one cache slot per server`,
  [
    'case',
    'requests',
    'servers used',
    'prompt k chars',
    'cached k chars',
    'best k chars',
    'share of best',
    'final turn',
  ],
  rows,
);
