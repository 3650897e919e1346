/**
 * Loop overhead (SPEC §15): a 50-step scripted run of the `units` pack through the fabric, in
 * this process with the control plane off, against the same 50 requests made by a bare `fetch`
 * loop (the baseline), by raw `node:http` (the floor), and by two agent frameworks.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { bareFetchRun, nodeHttpRun } from './support/bare-loop.ts';
import { benchEnv, openFabric, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
import { agentsSdkLoop, aiSdkLoop } from './support/framework-loops.ts';
import { fmt, median, printTable, ratio, rounds, since } from './support/stats.ts';
import { BENCH_MODEL, TASK, shapeOf, unitsScript } from './support/units-script.ts';

const STEPS = 50;
const ROUNDS = rounds(15, 2);

const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-loop-'));
const server = await startFakeLlmServer({ flavor: 'lm_studio', models: [BENCH_MODEL] });
try {
  const configPath = await writeConfig(
    dir,
    unitsConfig({ control: { enabled: false }, loop: { max_steps: STEPS + 5 } }),
  );
  const fabric = await openFabric(configPath, benchEnv(server.url, join(dir, 'runs')), dir);

  /** One scripted run; fails unless it made exactly STEPS chat requests and reported STEPS steps. */
  const timed = async (name: string, once: () => Promise<number>): Promise<number> => {
    server.requests.length = 0; // recorded requests would pile up across runs
    server.push(...unitsScript(STEPS));
    const start = performance.now();
    const steps = await once();
    const ms = since(start);
    const chats = server.chatRequests().length;
    if (steps !== STEPS || chats !== STEPS)
      throw new Error(`bench: ${name} took ${steps} steps in ${chats} requests, expected ${STEPS}`);
    return ms;
  };

  const fabricRun = async () => {
    const result = await fabric.run(TASK);
    if (result.status !== 'succeeded')
      throw new Error(`bench: the fabric run ${result.status}: ${result.error?.message ?? ''}`);
    return result.steps;
  };
  // The first run warms the fabric up (pack module, model catalog) and shows what it sends.
  server.push(...unitsScript(STEPS));
  if ((await fabricRun()) !== STEPS) throw new Error('bench: the warm-up run did not take 50 steps');
  const shape = shapeOf(server.chatRequests()[0]?.body);

  const contenders: [string, () => Promise<number>][] = [
    ['bare fetch loop (baseline)', () => bareFetchRun(server.url, shape, { maxSteps: STEPS + 5 })],
    ['node:http keep-alive (floor)', () => nodeHttpRun(server.url, shape, STEPS)],
    ['fabric, control off', fabricRun],
    ['AI SDK streamText', aiSdkLoop(server.url, shape, STEPS + 5)],
    ['OpenAI Agents SDK', agentsSdkLoop(server.url, shape, STEPS + 5)],
  ];
  const samples = contenders.map(() => [] as number[]);
  for (const [name, once] of contenders) await timed(name, once); // warm-up: modules and the JIT
  // Round-robin, so drift on the machine touches every contender alike.
  for (let round = 0; round < ROUNDS; round += 1)
    for (const [i, [name, once]] of contenders.entries()) samples[i]!.push(await timed(name, once));

  const base = median(samples[0]!);
  printTable(
    `Loop overhead: a ${STEPS}-step scripted run, median of ${ROUNDS}`,
    ['contender', 'ms/run', 'ms/step', 'vs bare fetch'],
    contenders.map(([name], i) => {
      const ms = median(samples[i]!);
      return [name, fmt(ms), fmt(ms / STEPS), ratio(ms, base)];
    }),
  );
  await fabric.close();
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
