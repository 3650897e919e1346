/**
 * The baseline of the concurrent-runs bench, run as its own process so that its peak memory
 * compares with `fabric serve`'s: RUNS bare fetch loops started at once, requests capped at CAP
 * in flight (earlier runs first, as the fabric's limiter does). Prints one JSON line.
 *
 *   node --import tsx bench/concurrent-baseline.ts SHAPE_JSON URL RUNS STEPS CAP
 */
import { readFile } from 'node:fs/promises';
import { bareFetchRun, priorityLimiter } from './support/bare-loop.ts';
import { peakRssMiB } from './support/serve-process.ts';
import { since } from './support/stats.ts';
import type { ChatShape } from './support/units-script.ts';

const [shapeFile, url, runs, steps, cap] = process.argv.slice(2);
if (cap === undefined) throw new Error('usage: concurrent-baseline.ts SHAPE_JSON URL RUNS STEPS CAP');
const shape = JSON.parse(await readFile(shapeFile!, 'utf8')) as ChatShape;
const slot = priorityLimiter(Number(cap));
const started = performance.now();
const latencies = await Promise.all(
  Array.from({ length: Number(runs) }, async (_, index) => {
    const taken = await bareFetchRun(url!, shape, { maxSteps: Number(steps) + 5, acquire: slot(index) });
    if (taken !== Number(steps)) throw new Error(`bench: a bare run took ${taken} steps`);
    return since(started);
  }),
);
const wallMs = since(started);
console.log(JSON.stringify({ wallMs, latencies, peakMiB: await peakRssMiB('self') }));
