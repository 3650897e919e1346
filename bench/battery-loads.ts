/**
 * A battery's model loads and simulated time against the best schedule (SPEC §12.1, §15). With a
 * real model the fabric's own CPU is a rounding error; a battery's time is the servers' work:
 * model loads, prompt prefill (skipped for the prefix a server has cached) and generation. So
 * real batteries run against fake LM Studio servers with JIT loading and Auto-Evict (one
 * JIT-loaded model a server), and the requests each server received are replayed through a cost
 * model: a load 1.5 s (and it empties that model's prompt cache), uncached prefill at 1,000
 * tokens/s, generation at 40 tokens/s, 4 characters a token, one cache slot per loaded model.
 *
 * The best schedule loads only the models no server has loaded, once each; serves every request
 * with the longest prefix it shares with any earlier request of its model; and spreads that work
 * evenly over the servers (a lower bound no schedule beats). The one-server case is replayed in
 * the task-major order the battery used before issue 25 too, from the same requests.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { unitsResponder } from '../test/support/battery-fakes.ts';
import { type FakeLlmServer, type FakeModel, startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { benchEnv, openFabric, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
import { fmt, printTable } from './support/stats.ts';

const LOAD_SECONDS = 1.5;
const PREFILL_TPS = 1000;
const GENERATE_TPS = 40;
const CHARS_PER_TOKEN = 4;
/** Each scripted reply's completion tokens (battery-fakes.ts's units responder). */
const COMPLETION_TOKENS = 10;

const TASKS = [
  { id: 'km-to-mi', task: 'Convert 3 km to miles' },
  { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
  { id: 'mi-to-km', task: 'Convert 2 miles to km' },
  { id: 'in-to-cm', task: 'Convert 12 inches to centimetres' },
];

/** A request as the replay needs it. */
interface Served {
  readonly server: number;
  readonly model: string;
  /** The cell it belongs to: its model and task (the first user message). */
  readonly cell: string;
  readonly task: string;
  /** The prompt as a template renders it: the tools, then the messages. */
  readonly text: string;
}

function served(servers: readonly FakeLlmServer[]): Served[] {
  return servers
    .flatMap((server, index) => server.chatRequests().map((request) => ({ index, request })))
    .sort((a, b) => a.request.receivedAt - b.request.receivedAt)
    .map(({ index, request }) => {
      const body = request.body as {
        model: string;
        tools?: unknown;
        messages: { role: string; content: unknown }[];
      };
      const task = String(body.messages.find((m) => m.role === 'user')?.content ?? '');
      return {
        server: index,
        model: body.model,
        cell: `${body.model}\u0000${task}`,
        task,
        text: JSON.stringify({ tools: body.tools, messages: body.messages }),
      };
    });
}

function sharedPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  return i;
}

function requestSeconds(text: string, cached: number): number {
  return (text.length - cached) / CHARS_PER_TOKEN / PREFILL_TPS + COMPLETION_TOKENS / GENERATE_TPS;
}

interface Cost {
  readonly loads: number;
  readonly seconds: number;
}

/**
 * Replays `requests` in order: per server, the models loaded at the start stay; a request for
 * another model loads it JIT, evicting the model JIT-loaded before it. A server's time is the sum
 * of its requests' and loads' time; the battery's, the longest server's.
 */
function replay(requests: readonly Served[], loadedAtStart: readonly (readonly string[])[]): Cost {
  const servers = loadedAtStart.map((models) => ({
    loaded: new Set(models),
    jit: undefined as string | undefined,
    slots: new Map<string, string>(),
    seconds: 0,
  }));
  let loads = 0;
  for (const request of requests) {
    const server = servers[request.server]!;
    if (!server.loaded.has(request.model)) {
      if (server.jit !== undefined) {
        server.loaded.delete(server.jit);
        server.slots.delete(server.jit);
      }
      server.loaded.add(request.model);
      server.jit = request.model;
      server.seconds += LOAD_SECONDS;
      loads += 1;
    }
    const cached = sharedPrefix(server.slots.get(request.model) ?? '', request.text);
    server.seconds += requestSeconds(request.text, cached);
    server.slots.set(request.model, request.text);
  }
  return { loads, seconds: Math.max(...servers.map((server) => server.seconds)) };
}

/** The best schedule: the fewest loads, every request's best prefix, the work spread evenly. */
function best(requests: readonly Served[], loadedAtStart: readonly (readonly string[])[]): Cost {
  const everLoaded = new Set(loadedAtStart.flat());
  const loads = new Set(requests.map((r) => r.model).filter((model) => !everLoaded.has(model))).size;
  let work = loads * LOAD_SECONDS;
  requests.forEach((request, i) => {
    const earlier = requests.slice(0, i).filter((r) => r.model === request.model);
    const cached = Math.max(0, ...earlier.map((r) => sharedPrefix(r.text, request.text)));
    work += requestSeconds(request.text, cached);
  });
  return { loads, seconds: work / loadedAtStart.length };
}

/** The same requests, cell by cell, in the order task after task, each with every model (before issue 25). */
function taskMajor(requests: readonly Served[], models: readonly string[]): Served[] {
  const cells = new Map<string, Served[]>();
  for (const request of requests) cells.set(request.cell, [...(cells.get(request.cell) ?? []), request]);
  const order = TASKS.flatMap((task) => models.map((model) => `${model}\u0000${task.task}`));
  return order.flatMap((cell) => cells.get(cell) ?? []);
}

interface Case {
  readonly name: string;
  readonly servers: readonly FakeModel[][];
  readonly models: readonly string[];
  readonly tasks: number;
}

async function measure(
  spec: Case,
): Promise<{ requests: Served[]; loadsSeen: number; loadedAtStart: string[][] }> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-battery-'));
  const loadedAtStart = spec.servers.map((models) =>
    models.filter((m) => m.loaded !== false).map((m) => m.id),
  );
  const servers = await Promise.all(
    spec.servers.map((models) =>
      startFakeLlmServer({
        flavor: 'lm_studio',
        lmStudioV1Api: true,
        jitAutoEvict: true,
        respond: unitsResponder(() => 'converts'),
        models,
      }),
    ),
  );
  try {
    const configPath = await writeConfig(dir, unitsConfig({ control: { enabled: false } }));
    const file = join(dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'bench',
        specialist: 'units',
        models: spec.models,
        tasks: TASKS.slice(0, spec.tasks),
      }),
    );
    const env = benchEnv(servers.map((server) => server.url).join(','), join(dir, 'runs'));
    const fabric = await openFabric(configPath, env, dir);
    try {
      const cells = await fabric.battery(file);
      const failed = cells.filter((cell) => !cell.passed);
      if (cells.length !== spec.tasks * spec.models.length || failed.length > 0)
        throw new Error(`bench: ${failed.length} of ${cells.length} cells failed: ${failed[0]?.error ?? ''}`);
      return {
        requests: served(servers),
        loadsSeen: servers.reduce((sum, server) => sum + server.loads().length, 0),
        loadedAtStart,
      };
    } finally {
      await fabric.close();
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await rm(dir, { recursive: true, force: true });
  }
}

const A = 'lab/alpha-7b';
const B = 'lab/beta-7b';
const cases: Case[] = [
  {
    name: '3 tasks × 2 models, one server, JIT + Auto-Evict',
    servers: [
      [
        { id: A, toolUse: true, loaded: false },
        { id: B, toolUse: true, loaded: false },
      ],
    ],
    models: [A, B],
    tasks: 3,
  },
  {
    name: '4 tasks × 2 models, two servers, one model loaded on each',
    servers: [
      [
        { id: A, toolUse: true, loaded: true },
        { id: B, toolUse: true, loaded: false },
      ],
      [
        { id: B, toolUse: true, loaded: true },
        { id: A, toolUse: true, loaded: false },
      ],
    ],
    models: [A, B],
    tasks: 4,
  },
];

const rows: string[][] = [];
for (const spec of cases) {
  const { requests, loadsSeen, loadedAtStart } = await measure(spec);
  const ideal = best(requests, loadedAtStart);
  const ran = replay(requests, loadedAtStart);
  const row = (schedule: string, cost: Cost, seen: string) => [
    spec.name,
    schedule,
    String(requests.length),
    seen,
    String(cost.loads),
    String(ideal.loads),
    fmt(cost.seconds),
    fmt(ideal.seconds),
    `${fmt(cost.seconds / ideal.seconds)}×`,
  ];
  rows.push(row('model after model (now)', ran, String(loadsSeen)));
  if (spec.servers.length === 1)
    rows.push(row('task after task (before)', replay(taskMajor(requests, spec.models), loadedAtStart), '–'));
}
printTable(
  'Battery loads and simulated time against the best schedule (targets: 2 loads on one server; no loads and ≤ 1.1× on two)',
  [
    'case',
    'order',
    'requests',
    'loads (server)',
    'loads (replay)',
    'best loads',
    'simulated s',
    'best s',
    'of best',
  ],
  rows,
);
