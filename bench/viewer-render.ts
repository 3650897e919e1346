/**
 * The run viewer on a large run (SPEC §13): a 1,000-step run's page (`GET /runs/<id>` through
 * the app, runlog read included), against reading and parsing that runlog alone (the floor a
 * page cannot go below), and the HTML rendering alone. Also the runs list of 300 such runs'
 * summaries, cold and warm (ended runs' summaries are cached).
 */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/load.ts';
import { Fabric } from '../src/composition/fabric.ts';
import { createApp } from '../src/interfaces/http/app.ts';
import { recordFromEvents } from '../src/application/runs/run-record.ts';
import { runViewOf } from '../src/interfaces/http/run-view.ts';
import { runPage } from '../src/interfaces/http/viewer/run-page.ts';
import { QUICK, fmt, median, printTable, rounds, since } from './support/stats.ts';
import { writeLongRun } from './support/long-runlog.ts';

const STEPS = 1000;
const ROUNDS = rounds(15, 2);
const RUN_ID = '20260101T000000Z-b1000';

const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-viewer-'));
try {
  const configPath = join(dir, 'fabric.yaml');
  await writeFile(configPath, 'version: 1\ncontrol: { enabled: false }\nspecialists: {}\n');
  const config = await loadConfig({ configPath, cwd: dir, env: { FABRIC_RUNS_DIR: join(dir, 'runs') } });
  const fabric = new Fabric(config);
  const store = fabric.runLogStore;
  await writeLongRun(store, RUN_ID, STEPS);
  const bytes = (await stat(store.pathOf(RUN_ID))).size;
  const app = createApp({ fabric, requireToken: false });
  const check = { liveness: { isOwnerAlive: () => 'unknown' as const }, now: new Date() };

  const measure = async (work: () => Promise<unknown>): Promise<number> => {
    await work(); // warm-up
    const samples: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const start = performance.now();
      await work();
      samples.push(since(start));
    }
    return median(samples);
  };

  let pageBytes = 0;
  const read = await measure(() => store.read(RUN_ID));
  const { events } = await store.read(RUN_ID);
  const render = await measure(async () => {
    pageBytes = runPage(
      runViewOf(recordFromEvents(RUN_ID, events, { runlog: '', torn: false, live: false }, check)),
      events,
      [],
      {
        daemon: false,
        batteries: false,
      },
    ).text.length;
  });
  const whole = await measure(async () => {
    const response = await app.request(`/runs/${RUN_ID}`);
    if (response.status !== 200) throw new Error(`GET /runs/${RUN_ID}: ${response.status}`);
    await response.text();
  });
  printTable(
    `Run viewer: a ${STEPS}-step run (${events.length} events, runlog ${fmt(bytes / 1024)} KiB, page ${fmt(pageBytes / 1024)} KiB), median of ${ROUNDS}`,
    ['what', 'ms', 'vs reading the runlog'],
    [
      ['read and parse the runlog (floor)', fmt(read), '1.00x'],
      ['render the page from its events', fmt(render), `${(render / read).toFixed(2)}x`],
      ['GET /runs/<id> (read + render + HTTP)', fmt(whole), `${(whole / read).toFixed(2)}x`],
    ],
  );

  const LIST_RUNS = QUICK ? 30 : 300;
  for (let i = 0; i < LIST_RUNS; i++)
    await writeLongRun(store, `20260102T000000Z-l${String(i).padStart(4, '0')}`, 20);
  const listApp = createApp({ fabric, requireToken: false });
  const start = performance.now();
  await (await listApp.request('/')).text();
  const cold = since(start);
  const warm = await measure(async () => (await listApp.request('/')).text());
  printTable(
    `Runs list: ${LIST_RUNS + 1} runs of 20 steps, first page (50)`,
    ['what', 'ms'],
    [
      ['GET / cold (every runlog of the page read)', fmt(cold)],
      ['GET / warm (ended runs cached)', fmt(warm)],
    ],
  );
  await fabric.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
