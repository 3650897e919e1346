import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRunId } from '../../../../src/application/run/run-id.ts';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import { RunHub, liveRuns } from '../../../../src/interfaces/http/run-hub.ts';
import type { RunView } from '../../../../src/interfaces/http/run-view.ts';
import { RunIndex } from '../../../../src/interfaces/http/viewer/run-index.ts';
import { RunListFeed } from '../../../../src/interfaces/http/viewer/run-list-feed.ts';
import { LocalProcessLiveness } from '../../../../src/infrastructure/runlog/process-liveness.ts';
import { systemClock } from '../../../../src/infrastructure/clock.ts';
import { type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import { until } from '../../../support/until.ts';
import { makeFabric } from '../http-harness.ts';

describe('RunListFeed', () => {
  let sandbox: Sandbox;
  let fabric: Fabric;
  beforeAll(async () => {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
  });
  afterAll(async () => {
    await fabric.close();
    await sandbox.cleanup();
  });

  it('tells of a run that another process writes to the runs directory, as it starts, goes on and ends', async () => {
    const store = fabric.runLogStore;
    const hub = new RunHub(fabric);
    const liveness = new LocalProcessLiveness();
    const index = new RunIndex(fabric.runReadModel({ live: liveRuns(hub), control: 'never', liveness }));
    const feed = new RunListFeed(hub, index, store, { flushMs: 10, scanMs: 50 });
    const heard: RunView[] = [];
    const stop = feed.subscribe((views) => heard.push(...views));
    const hasHeard = (runId: string, test: (view: RunView) => boolean) => async () =>
      heard.find((view) => view.run_id === runId && test(view));
    try {
      // Let the first scan learn the directory as the page showed it.
      await new Promise((done) => setTimeout(done, 120));
      const runId = newRunId(systemClock);
      // As `fabric run` in another process would: its own runlog, its own pid.
      const log = await store.create(runId);
      await log.append({
        kind: 'run_start',
        specialist: 'units',
        task: 'Convert 3 km',
        model: 'qwen3:8b',
        backend: 'lm_studio',
        workspace: null,
        config_digest: 'abc',
        fabric_version: '0.1.0',
        max_steps: 10,
        budget_s: 600,
        pid: process.pid,
        host: hostname(),
      });
      await until(
        'the run as it starts',
        hasHeard(runId, (view) => view.status === 'running'),
      );
      await log.append({
        kind: 'llm_response',
        step: 1,
        content: '',
        tool_calls: [],
        finish_reason: 'stop',
        usage: { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 },
        latency_ms: 5,
        attempts: 1,
        backend: 'lm_studio',
      });
      await until(
        'its tokens so far',
        hasHeard(runId, (view) => view.total_tokens === 34),
      );
      await log.append({
        kind: 'run_end',
        status: 'succeeded',
        payload: { summary: 'done' },
        error: null,
        steps: 1,
        usage: { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 },
        duration_ms: 100,
      });
      await log.close();
      await until(
        'its end',
        hasHeard(runId, (view) => view.status === 'succeeded'),
      );
      // Once ended it is not read again: no more updates of it.
      const count = heard.length;
      await new Promise((done) => setTimeout(done, 200));
      expect(heard.length).toBe(count);
    } finally {
      stop();
    }
  });
});
