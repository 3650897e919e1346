/**
 * The run queue in memory: one FIFO per specialist, each job taken once. For tests and for a
 * single process that wants the queue's semantics without Postgres; nothing survives the process.
 */
import type { QueuedRun, RunQueue, TakenRun, TakenRunOutcome } from '../../application/queue/queue-ports.ts';

/** A `RunQueue` held in this process. */
export class MemoryRunQueue implements RunQueue {
  readonly #waiting = new Map<string, TakenRun[]>();
  readonly #settled = new Map<string, TakenRunOutcome>();
  readonly #taken = new Map<string, TakenRun>();
  #prepared = new Set<string>();
  #jobs = 0;
  #closed = false;

  async prepare(specialists: readonly string[]): Promise<void> {
    this.#open();
    this.#prepared = new Set([...this.#prepared, ...specialists]);
  }

  async enqueue(run: QueuedRun): Promise<void> {
    this.#open();
    const queue = this.#waiting.get(run.specialist) ?? [];
    queue.push({ run, jobId: `job-${++this.#jobs}` });
    this.#waiting.set(run.specialist, queue);
  }

  async take(specialists: readonly string[], limit: number): Promise<readonly TakenRun[]> {
    this.#open();
    const taken: TakenRun[] = [];
    for (const specialist of specialists) {
      const queue = this.#waiting.get(specialist) ?? [];
      while (taken.length < limit && queue.length > 0) {
        const job = queue.shift()!;
        this.#taken.set(job.jobId, job);
        taken.push(job);
      }
    }
    return taken;
  }

  async settle(taken: TakenRun, outcome: TakenRunOutcome): Promise<void> {
    this.#open();
    if (!this.#taken.has(taken.jobId)) throw new Error(`job ${taken.jobId} was not taken`);
    this.#settled.set(taken.jobId, outcome);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  /** The specialists `prepare` was told of. */
  prepared(): string[] {
    return [...this.#prepared];
  }

  /** The runs no worker has taken, of one specialist or of all. */
  waiting(specialist?: string): QueuedRun[] {
    const queues =
      specialist === undefined ? [...this.#waiting.values()] : [this.#waiting.get(specialist) ?? []];
    return queues.flat().map((job) => job.run);
  }

  /** How each settled job went, by run id. */
  settled(): Map<string, TakenRunOutcome> {
    const byRun = new Map<string, TakenRunOutcome>();
    for (const [jobId, outcome] of this.#settled) byRun.set(this.#taken.get(jobId)!.run.runId, outcome);
    return byRun;
  }

  #open(): void {
    if (this.#closed) throw new Error('the run queue is closed');
  }
}
