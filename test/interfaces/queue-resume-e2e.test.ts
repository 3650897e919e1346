/**
 * Issue 31: a queue worker killed (SIGKILL) at a model turn has its run resumed by another worker,
 * from the runlog in the runs directory they share, under the same run id (SPEC §18), at most
 * `worker.max_resumes` times. Heartbeats are short (0.25 s, dead after 1.5 s) so the file stays
 * fast; nothing here asserts a duration.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { type ClusterWorker, type QueueCluster, startQueueCluster } from '../support/queue-cluster.ts';
import { stepsResponder } from '../support/steps-responder.ts';
import { until } from '../support/until.ts';

describe('queue workers resume the runs of a worker that died', () => {
  let llm: FakeLlmServer;
  let cluster: QueueCluster;
  let shared: string;

  /** The model's turns asked for a task: how many assistant turns each request already held. */
  const turnsAsked = (task: string): number[] =>
    llm
      .chatRequests()
      .filter((request) => JSON.stringify(request.body).includes(task))
      .map(
        (request) =>
          (request.body as { messages: { role: string }[] }).messages.filter(
            (message) => message.role === 'assistant',
          ).length,
      );
  const runlog = async (id: string) =>
    (await readFile(join(shared, id, 'runlog.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string; seq: number; status?: string; run_id: string });
  /**
   * Kills the worker once the run's `turn`-th model request is in flight (answered after the
   * task's delay); returns the turn last asked before the kill.
   */
  const killAtTurn = async (worker: ClusterWorker, task: string, turn: number) => {
    await until(`request ${turn} of "${task}"`, async () =>
      turnsAsked(task).length >= turn ? true : undefined,
    );
    worker.proc.kill('SIGKILL');
    const last = turnsAsked(task).at(-1);
    await worker.proc.catch(() => {});
    return last;
  };

  beforeAll(async () => {
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 131_072 }],
      respond: stepsResponder,
    });
    cluster = await startQueueCluster(llm.url, {
      worker: { heartbeat_s: 0.25, dead_after_s: 1.5, max_resumes: 1 },
      loop: { max_steps: 400, stuck_repeats: 1000 },
    });
    shared = join(cluster.sandbox.dir, 'shared-runs');
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    await llm?.stop();
  }, 30_000);

  it('resumes under the same id a run whose worker was killed at a model turn: no recorded turn asked again', async () => {
    const first = await cluster.startWorker('first', { runsDir: shared });
    const task = 'Convert, then be resumed: steps=8 delay=400';
    const id = await cluster.enqueue(task);
    const inFlight = await killAtTurn(first, task, 4);
    const second = await cluster.startWorker('second', { runsDir: shared });
    const status = await cluster.ended(id);
    expect(status).toBe('succeeded');
    expect(cluster.log(second.proc)).toContain(`run ${id} resumed (units, resume 1)`);

    // Every turn asked once, but the one in flight at the kill (asked again, once).
    const asked = turnsAsked(task);
    expect(new Set(asked)).toEqual(new Set([0, 1, 2, 3, 4, 5, 6, 7, 8]));
    expect(asked.length).toBeLessThanOrEqual(10);
    const again = asked.filter((turn, i) => asked.indexOf(turn) !== i);
    expect(again.every((turn) => turn === inFlight)).toBe(true);

    // One run, one runlog: its first run_start, the resume, and its one end; mirrored whole.
    const lines = await runlog(id);
    expect(new Set(lines.map((line) => line.run_id))).toEqual(new Set([id]));
    expect(lines.filter((line) => line.kind === 'run_start')).toHaveLength(1);
    expect(lines.filter((line) => line.kind === 'run_resumed')).toHaveLength(1);
    expect(lines.filter((line) => line.kind === 'run_end').map((line) => line.status)).toEqual(['succeeded']);
    const row = await cluster.row(id);
    expect(row).toMatchObject({ status: 'succeeded', resumes: 1 });
    expect(row.last_seq).toBe(lines.at(-1)?.seq);
    console.info(
      `killed at turn 4 of 9: ${asked.length} model requests in all (${again.length} asked again)`,
    );
    second.proc.kill('SIGTERM');
    await second.proc;
  }, 120_000);

  it('fences a worker paused past its lease: once another resumed its run, it writes nothing more to it', async () => {
    const paused = await cluster.startWorker('paused', { runsDir: shared });
    const task = 'Convert, paused: steps=10 delay=300';
    const id = await cluster.enqueue(task);
    await until('three model turns', async () => (turnsAsked(task).length >= 3 ? true : undefined));
    paused.proc.kill('SIGSTOP');
    const inFlight = turnsAsked(task).at(-1);
    const other = await cluster.startWorker('other', { runsDir: shared });
    await until('the resume', async () =>
      cluster.log(other.proc).includes(`run ${id} resumed`) ? true : undefined,
    );
    paused.proc.kill('SIGCONT');
    await until('the paused worker to give the run up', async () =>
      cluster.log(paused.proc).includes(`run ${id} given up: its lease`) ? true : undefined,
    );
    expect(await cluster.ended(id)).toBe('succeeded');
    // One writer at a time: every line's seq once, in order, one end; no turn asked twice but the one in flight.
    const lines = await runlog(id);
    expect(lines.map((line) => line.seq)).toEqual(lines.map((_, i) => i + 1));
    expect(lines.filter((line) => line.kind === 'run_end').map((line) => line.status)).toEqual(['succeeded']);
    const asked = turnsAsked(task);
    expect(asked.filter((turn, i) => asked.indexOf(turn) !== i).every((turn) => turn === inFlight)).toBe(
      true,
    );
    expect(cluster.log(paused.proc)).not.toContain(`run ${id} ended`);
    const row = await cluster.row(id);
    expect(row).toMatchObject({ status: 'succeeded', resumes: 1, last_seq: lines.length });
    for (const worker of [paused, other]) {
      worker.proc.kill('SIGTERM');
      await worker.proc;
    }
  }, 120_000);

  it('leaves interrupted, saying why, a run whose workers died more than worker.max_resumes times', async () => {
    const task = 'Convert, and die twice: steps=20 delay=300';
    const first = await cluster.startWorker('first-of-two', { runsDir: shared });
    const id = await cluster.enqueue(task);
    await killAtTurn(first, task, 3);
    const second = await cluster.startWorker('second-of-two', { runsDir: shared });
    await until('the resume', async () =>
      cluster.log(second.proc).includes(`run ${id} resumed`) ? true : undefined,
    );
    await killAtTurn(second, task, turnsAsked(task).length + 2);
    // No worker left: the server's reaper ends it, max_resumes (1) spent.
    expect(await cluster.ended(id)).toBe('interrupted');
    const run = (await (await fetch(`${cluster.url}/v1/runs/${id}`)).json()) as {
      error: { code: string; message: string };
    };
    expect(run.error.code).toBe('run_interrupted');
    expect(run.error.message).toMatch(/resumed once by other workers already \(worker\.max_resumes 1\)/);
    expect((await cluster.row(id)).resumes).toBe(1);
    expect(cluster.log(cluster.server)).toMatch(
      new RegExp(`marked 1 run whose lease expired interrupted: ${id}`),
    );
  }, 120_000);
});
