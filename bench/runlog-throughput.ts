/**
 * Runlog write throughput (SPEC §6, §15): events a second appended to a FileRunLogStore
 * runlog, against a bare `fs.appendFileSync` loop writing the very same lines (the baseline)
 * and `fs.writeSync` on a file kept open (the floor). The events are a 50-step run's kinds
 * (llm_request, llm_response, tool_call, tool_result) with realistic bodies.
 */
import { appendFileSync, closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEventInput } from '../src/domain/run-events.ts';
import { FileRunLogStore } from '../src/infrastructure/runlog/file-run-log-store.ts';
import { QUICK, fmt, median, printTable, rounds, since } from './support/stats.ts';
import { CONVERT_ARGS } from './support/units-script.ts';

const EVENTS = QUICK ? 2_000 : 20_000;
const ROUNDS = rounds(5, 1);

/** The four events of one step of a units run. */
function stepEvents(step: number): RunEventInput[] {
  const callId = `call_${step}`;
  const args = JSON.stringify(CONVERT_ARGS);
  return [
    {
      kind: 'llm_request',
      step,
      model: 'bench-model',
      messages: 2 * step,
      tools: ['convert_units', 'finish_task'],
      final_turn: false,
      new_messages: [{ role: 'tool', tool_call_id: `call_${step - 1}`, content: '1 km = 1000 m' }],
    },
    {
      kind: 'llm_response',
      step,
      content: '',
      tool_calls: [{ id: callId, name: 'convert_units', arguments: args }],
      finish_reason: 'tool_calls',
      usage: { prompt_tokens: 120 * step, completion_tokens: 12, total_tokens: 120 * step + 12 },
      latency_ms: 2,
      attempts: 1,
      backend: 'lm_studio http://127.0.0.1:1234',
    },
    { kind: 'tool_call', step, call_id: callId, tool: 'convert_units', arguments: args },
    {
      kind: 'tool_result',
      step,
      call_id: callId,
      tool: 'convert_units',
      result: '1 km = 1000 m',
      duration_ms: 0,
    },
  ];
}

const events: RunEventInput[] = [];
for (let step = 1; events.length < EVENTS; step += 1) events.push(...stepEvents(step));
events.length = EVENTS;

const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-runlog-'));
try {
  const store = new FileRunLogStore(join(dir, 'runs'));
  let round = 0;
  let lines: string[] = [];
  const cases: [string, () => Promise<number>][] = [
    [
      'fs.appendFileSync(path, line) (baseline)',
      async () => {
        const path = join(dir, `append-${round}.jsonl`);
        const start = performance.now();
        for (const line of lines) appendFileSync(path, line);
        return since(start);
      },
    ],
    [
      'fs.writeSync(fd, line), file kept open (floor)',
      async () => {
        const fd = openSync(join(dir, `write-${round}.jsonl`), 'a');
        const start = performance.now();
        for (const line of lines) writeSync(fd, line);
        const ms = since(start);
        closeSync(fd);
        return ms;
      },
    ],
    [
      'FileRunLogStore, each append awaited',
      async () => {
        const log = await store.create(`awaited-${round}`);
        const start = performance.now();
        for (const event of events) await log.append(event);
        const ms = since(start);
        await log.close();
        return ms;
      },
    ],
    [
      'FileRunLogStore, appends not awaited',
      async () => {
        const log = await store.create(`burst-${round}`);
        const start = performance.now();
        await Promise.all(events.map((event) => log.append(event)));
        const ms = since(start);
        await log.close();
        return ms;
      },
    ],
  ];
  // The bare loops write the store's own lines, byte for byte.
  const sample = await store.create('lines');
  for (const event of events) await sample.append(event);
  await sample.close();
  lines = readFileSync(store.pathOf('lines'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => `${line}\n`);
  if (lines.length !== EVENTS) throw new Error(`bench: the runlog has ${lines.length} lines, not ${EVENTS}`);

  const samples = cases.map(() => [] as number[]);
  for (; round < ROUNDS; round += 1)
    for (const [i, [, once]] of cases.entries()) samples[i]!.push(await once());
  for (const [i, [name]] of cases.entries()) {
    if (name.startsWith('fs.')) continue;
    const id = i === 2 ? 'awaited-0' : 'burst-0';
    const written = readFileSync(store.pathOf(id), 'utf8').split('\n').length - 1;
    if (written !== EVENTS) throw new Error(`bench: ${name} wrote ${written} lines, not ${EVENTS}`);
  }

  const bytes = lines.reduce((n, line) => n + Buffer.byteLength(line), 0);
  const rate = (ms: number) => (EVENTS / ms) * 1000;
  const base = rate(median(samples[0]!));
  printTable(
    `Runlog throughput: ${EVENTS} events (${fmt(bytes / EVENTS)} bytes each on average), median of ${ROUNDS}`,
    ['writer', 'events/s', 'µs/event', 'throughput vs baseline'],
    cases.map(([name], i) => {
      const ms = median(samples[i]!);
      return [name, fmt(rate(ms)), fmt((ms * 1000) / EVENTS), `${(rate(ms) / base).toFixed(2)}x`];
    }),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
