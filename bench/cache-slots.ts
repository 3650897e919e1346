/**
 * Runs sharing a server's slots (issue 38): `runs` 20-step `units` runs at once on one fake LM
 * Studio server whose model serves `slots` requests at once (`config.parallel`). The requests
 * the server received are replayed, in the order they arrived, through `slots` cache slots (a
 * request takes the slot whose prompt shares the longest prefix with it when that is at least
 * half of it, else the least recently used one, and leaves its own there); the best possible reuses all of its run's previous request. The simulated makespan runs
 * the same replay through a GPU: uncached prefill at 1,000 tokens/s, 20 generated tokens a turn at
 * 40 tokens/s, 4 characters a token, a request starting once its slot and its run's previous
 * request are done (tools take no time). The fake prefills for real at SPEEDUP times that speed
 * and reports each prefill in llama-server's `timings`, so the pool sizes its holds from the
 * server's figures, not from this machine's clock: the figures do not move with its load.
 * Scheduler off (the baseline): the server does not say how many requests it serves at once (LM
 * Studio's v0 API), so the fabric sends every request at once and the server takes them in turn,
 * as it did before the slot scheduler.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { benchEnv, openFabric, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
import { CONVERT_TURN, FINISH_TURN, MODEL_ID, TASK } from './support/units-script.ts';

const STEPS = 20;
const PREFILL_PER_S = 1000;
const TURN_S = 20 / 40;
/**
 * How much faster the fake prefills than the simulated GPU: fast enough for a quick bench, slow
 * enough that a hold (a cold prefill, ≥ 250 tokens: ≥ 125 ms) outlasts the fabric's own time
 * between a run's requests even on a loaded machine.
 */
const SPEEDUP = 2;

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

/** The run a request belongs to: its task, the first user message. */
function runOf(body: unknown): string {
  const messages = (body as { messages: { role: string; content: unknown }[] }).messages;
  return JSON.stringify(messages.find((m) => m.role === 'user')?.content);
}

export interface SlotShare {
  readonly requests: number;
  readonly prompt: number;
  readonly cached: number;
  readonly best: number;
  /** Simulated seconds from the first request to the last answer. */
  readonly makespanS: number;
  /** The same with every request served as best it could be. */
  readonly bestMakespanS: number;
}

/** Replays the bodies, in arrival order, through `slots` cache slots and the GPU's cost model. */
export function replaySlots(bodies: readonly unknown[], slots: number): SlotShare {
  const cache: string[] = Array.from({ length: slots }, () => '');
  const slotFree = Array.from({ length: slots }, () => 0);
  const lastUsed = Array.from({ length: slots }, () => -1);
  let used = 0;
  const bestFree = Array.from({ length: slots }, () => 0);
  const previous = new Map<string, string>();
  const runEnd = new Map<string, number>();
  const bestEnd = new Map<string, number>();
  let prompt = 0;
  let cached = 0;
  let best = 0;
  for (const body of bodies) {
    const text = rendered(body);
    const run = runOf(body);
    const hits = cache.map((c) => sharedPrefix(c, text));
    // llama-server's choice: the slot most like the prompt when it shares at least half of it
    // (`--slot-prompt-similarity` 0.5), else the least recently used.
    const most = hits.indexOf(Math.max(...hits));
    const slot = hits[most]! >= text.length / 2 ? most : lastUsed.indexOf(Math.min(...lastUsed));
    lastUsed[slot] = used++;
    const hit = hits[slot]!;
    const possible = Math.min(previous.get(run)?.length ?? 0, text.length);
    const cost = (chars: number) => chars / 4 / PREFILL_PER_S + TURN_S;
    const start = Math.max(slotFree[slot]!, runEnd.get(run) ?? 0);
    slotFree[slot] = start + cost(text.length - hit);
    runEnd.set(run, slotFree[slot]!);
    const bestSlot = bestFree.indexOf(Math.min(...bestFree));
    const bestStart = Math.max(bestFree[bestSlot]!, bestEnd.get(run) ?? 0);
    bestFree[bestSlot] = bestStart + cost(text.length - possible);
    bestEnd.set(run, bestFree[bestSlot]!);
    prompt += text.length;
    cached += hit;
    best += possible;
    cache[slot] = text;
    previous.set(run, text);
  }
  return {
    requests: bodies.length,
    prompt,
    cached,
    best,
    makespanS: Math.max(...runEnd.values()),
    bestMakespanS: Math.max(...bestEnd.values()),
  };
}

/** `runs` runs at once on one server whose model serves `slots` requests at once. */
/** `hostCache`: the server keeps the prompts a slot evicts and restores them (llama-server `--cache-ram`). */
export async function measureSlots(
  runs: number,
  slots: number,
  scheduler = true,
  hostCache = false,
): Promise<SlotShare> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-slots-'));
  const server = await startFakeLlmServer({
    flavor: 'lm_studio',
    lmStudioV1Api: scheduler,
    models: [{ id: MODEL_ID, toolUse: true, loaded: true, parallel: slots }],
    // A GPU's prefill, reported as llama-server does: what the pool sizes its holds from.
    prefillTokensPerSecond: PREFILL_PER_S * SPEEDUP,
    prefillTimings: true,
    prefillHostCache: hostCache,
    // One step short of the steps, so each run's last request is the finish-only final turn.
    respond: ({ tools }) => (tools.length === 1 && tools[0] === 'finish_task' ? FINISH_TURN : CONVERT_TURN),
  });
  try {
    const configPath = await writeConfig(
      dir,
      unitsConfig({ control: { enabled: false }, loop: { max_steps: STEPS - 1 } }),
    );
    const fabric = await openFabric(configPath, benchEnv(server.url, join(dir, 'runs')), dir);
    try {
      // Each run in its own workspace: runs in one workspace take turns (its lock), not the slots.
      const results = await Promise.all(
        Array.from({ length: runs }, async (_, i) => {
          const workspace = join(dir, `ws-${i + 1}`);
          await mkdir(workspace);
          return fabric.run(`${TASK} (run ${i + 1})`, workspace);
        }),
      );
      for (const result of results) {
        if (result.status !== 'max_steps' || result.steps !== STEPS)
          throw new Error(
            `bench: a run ended ${result.status} after ${result.steps} steps, expected max_steps after ${STEPS}`,
          );
      }
      const bodies = server
        .chatRequests()
        .sort((a, b) => a.receivedAt - b.receivedAt)
        .map((request) => request.body);
      return replaySlots(bodies, slots);
    } finally {
      await fabric.close();
    }
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
