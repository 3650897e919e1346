import PgBoss from 'pg-boss';
import type { QueuedRun, RunQueue, TakenRun, TakenRunOutcome } from '../../application/queue/queue-ports.ts';

/** The queue's own schema in the control plane's database; pg-boss creates and migrates it. */
export const QUEUE_SCHEMA = 'fabric_queue';

// pg-boss caps a job's expiry below 24 h. A run lasts its budget (default 30 min); a job that
// expires anyway is failed, never retried (its run is judged by the control plane, not the job).
const EXPIRE_IN_SECONDS = 23 * 60 * 60;

// Jobs of our queues taken (active) for a while whose run no worker recorded as taken.
const ORPHANS = `
select j.id, j.name, j.data from ${QUEUE_SCHEMA}.job j
join control.runs r on r.id = j.data->>'runId'
where j.state = 'active' and j.name like 'fabric-run-%' and r.status = 'queued'
  and j.started_on < now() - make_interval(secs => $1::double precision)
limit 100`;

/** One queue per specialist, so a worker takes only what it can run (`--specialists`). */
export function queueNameOf(specialist: string): string {
  return `fabric-run-${specialist}`;
}

/**
 * The run queue on pg-boss 10 (the line that runs on Node 20), in the control plane's Postgres.
 * Every job has `retryLimit: 0`: a job taken by a worker that dies is failed when it expires,
 * and its run is `interrupted` by the worker registry; a job not taken waits for any worker.
 */
export class PgBossRunQueue implements RunQueue {
  readonly #boss: PgBoss;
  readonly #prepared = new Set<string>();
  #started: Promise<unknown> | undefined;

  constructor(
    dsn: string,
    options: { readonly onError?: (error: Error) => void; readonly poolSize?: number } = {},
  ) {
    this.#boss = new PgBoss({
      connectionString: dsn,
      schema: QUEUE_SCHEMA,
      max: options.poolSize ?? 3,
      schedule: false,
      // Maintenance (expiring, archiving) runs in whichever process holds pg-boss's lock.
      supervise: true,
      application_name: 'agent-fabric queue',
    });
    // pg-boss emits its background faults; unheard, an 'error' event would end the process.
    this.#boss.on('error', (error: Error) => options.onError?.(error));
  }

  /** Starts pg-boss once; a start that failed (the database down) is tried again next time. */
  #start(): Promise<unknown> {
    this.#started ??= this.#boss.start().catch((error: unknown) => {
      this.#started = undefined;
      throw error;
    });
    return this.#started;
  }

  async prepare(specialists: readonly string[]): Promise<void> {
    await this.#start();
    for (const specialist of specialists) {
      if (this.#prepared.has(specialist)) continue;
      // Workers starting together on a fresh database create the same queue at once; pg-boss's
      // create_queue can then deadlock with itself, and the loser simply tries again.
      for (let attempt = 1; ; attempt++) {
        try {
          await this.#boss.createQueue(queueNameOf(specialist), {
            name: queueNameOf(specialist),
            policy: 'standard',
            retryLimit: 0,
            expireInSeconds: EXPIRE_IN_SECONDS,
          });
          break;
        } catch (error) {
          if (attempt >= 5 || !/deadlock|duplicate|unique/i.test(String(error))) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.random() * 100));
        }
      }
      this.#prepared.add(specialist);
    }
  }

  async enqueue(run: QueuedRun): Promise<void> {
    await this.prepare([run.specialist]);
    const id = await this.#boss.send(queueNameOf(run.specialist), toJobData(run), {
      retryLimit: 0,
      expireInSeconds: EXPIRE_IN_SECONDS,
    });
    if (id === null) throw new Error(`pg-boss did not accept run ${run.runId}`);
  }

  async take(specialists: readonly string[], limit: number): Promise<readonly TakenRun[]> {
    await this.prepare(specialists);
    const taken: TakenRun[] = [];
    for (const specialist of specialists) {
      if (taken.length >= limit) break;
      const jobs = await this.#boss.fetch<QueuedRun>(queueNameOf(specialist), {
        batchSize: limit - taken.length,
      });
      for (const job of jobs) taken.push({ jobId: job.id, run: fromJobData(job.data, specialist) });
    }
    return taken;
  }

  async settle(taken: TakenRun, outcome: TakenRunOutcome): Promise<void> {
    const name = queueNameOf(taken.run.specialist);
    if (outcome === 'ended') await this.#boss.complete(name, taken.jobId);
    else await this.#boss.fail(name, taken.jobId, { reason: 'the run could not start' });
  }

  async requeueOrphans(olderThanMs: number): Promise<readonly string[]> {
    // A server that has sent nothing since it started still reaps what a worker left behind.
    await this.#start();
    // Read-only on pg-boss's own table (its job state and start time): its API has no query
    // for "active since". The failing and the sending again go through its API.
    const { rows } = (await this.#boss.getDb().executeSql(ORPHANS, [olderThanMs / 1000])) as {
      rows: { id: string; name: string; data: QueuedRun }[];
    };
    const requeued: string[] = [];
    for (const job of rows) {
      const failed = (await this.#boss.fail(job.name, job.id, {
        reason:
          'its run is queued again (taken by no worker, or its worker died and it is to be resumed); sent again',
      })) as unknown as { affected?: number } | undefined;
      // Another reaper got there first.
      if ((failed?.affected ?? 0) === 0) continue;
      await this.#boss.send(job.name, job.data, { retryLimit: 0, expireInSeconds: EXPIRE_IN_SECONDS });
      requeued.push(job.data.runId);
    }
    return requeued;
  }

  async close(): Promise<void> {
    if (this.#started === undefined) return;
    await this.#started.catch(() => {});
    await this.#boss.stop({ graceful: false, wait: true, close: true });
  }
}

function toJobData(run: QueuedRun): object {
  return {
    runId: run.runId,
    specialist: run.specialist,
    task: run.task,
    ...(run.workspace === undefined ? {} : { workspace: run.workspace }),
    ...(run.model === undefined ? {} : { model: run.model }),
    ...(run.maxSteps === undefined ? {} : { maxSteps: run.maxSteps }),
    ...(run.tags === undefined ? {} : { tags: run.tags }),
    ...(run.cell === undefined ? {} : { cell: run.cell }),
  };
}

function fromJobData(data: QueuedRun, specialist: string): QueuedRun {
  return { ...data, specialist };
}
