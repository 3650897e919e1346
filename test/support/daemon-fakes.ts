/** In-memory fakes of the daemon's ports, for unit tests of its steps (test/application/daemon/). */
import type { DaemonEvent } from '../../src/application/daemon/daemon-events.ts';
import type {
  TaskRunner,
  TaskRunResult,
  ValidationReport,
  Validator,
} from '../../src/application/daemon/daemon-ports.ts';
import type { OpenSpecChange, OpenSpecTask } from '../../src/application/daemon/openspec.ts';
import type { RunResult, RunStatus } from '../../src/domain/run-result.ts';

/** A clock that moves 10 ms each time it is read. */
export function steppingClock(start = '2026-11-24T00:00:00Z') {
  let now = Date.parse(start);
  return {
    now: () => {
      now += 10;
      return new Date(now);
    },
  };
}

/** A run result with 15 tokens; `failed` carries an error. */
export function fakeRunResult(runId: string, status: RunStatus = 'succeeded'): RunResult {
  return {
    run_id: runId,
    status,
    payload: status === 'succeeded' ? { summary: 'done' } : null,
    error: status === 'failed' ? { code: 'tool_failed', message: 'the model gave up' } : null,
    model: 'm',
    backend: 'b',
    steps: 2,
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    runlog: `/runs/${runId}/runlog.jsonl`,
  };
}

/** A task runner answering from a queue (default: a succeeded run); keeps each task text. */
export class QueuedRunner implements TaskRunner {
  readonly texts: string[] = [];
  readonly #answers: TaskRunResult[];
  #n = 0;
  /** Aborts this controller when the run is asked (a SIGTERM mid-run). */
  abortOnRun: AbortController | undefined;

  constructor(answers: TaskRunResult[] = []) {
    this.#answers = answers;
  }

  async run(task: string): Promise<TaskRunResult> {
    this.texts.push(task);
    this.abortOnRun?.abort();
    this.#n += 1;
    return this.#answers.shift() ?? { kind: 'ran', result: fakeRunResult(`run${this.#n}`) };
  }
}

/**
 * A validator answering from a queue (default ok): true passes, false is test `x` failing, a list
 * is those tests failing, null is a build that fails.
 */
export class QueuedValidator implements Validator {
  calls = 0;
  readonly #answers: (boolean | string[] | null)[];
  abortOnValidate: AbortController | undefined;

  constructor(answers: (boolean | string[] | null)[] = []) {
    this.#answers = answers;
  }

  async validate(): Promise<ValidationReport> {
    this.calls += 1;
    this.abortOnValidate?.abort();
    return validationReport(this.#answers.length === 0 ? true : this.#answers.shift()!);
  }
}

/** A validation report: true passes, false is test `x` failing, a list those tests, null a build error. */
export function validationReport(answer: boolean | string[] | null): ValidationReport {
  if (answer === true) {
    return { ok: true, report: '$ cargo test\nexit code 0', summary: '', testsPassed: 4, failedTests: [] };
  }
  if (answer === null) {
    return {
      ok: false,
      report: '$ cargo build\nexit code 101\nerror[E0425]',
      summary: '$ cargo build: exit code 101',
      testsPassed: null,
      failedTests: null,
    };
  }
  const failed = answer === false ? ['x'] : answer;
  return {
    ok: false,
    report: `$ cargo test\nexit code 101\n${failed.map((name) => `test ${name} ... FAILED`).join('\n')}`,
    summary: `$ cargo test: exit code 101\n${failed.map((name) => `test ${name} failed`).join('\n')}`,
    testsPassed: 0,
    failedTests: failed,
  };
}

/** Collects the events a step emits. */
export function eventLog() {
  const events: DaemonEvent[] = [];
  return {
    events,
    emit: (event: DaemonEvent) => events.push(event),
    kinds: () => events.map((e) => e.event),
  };
}

export function openSpecTask(id: string, text: string, done = false): OpenSpecTask {
  return { id, text, done, details: [], section: '1. Work', line: 1, parent: null };
}

export function openSpecChange(id: string, tasks: OpenSpecTask[]): OpenSpecChange {
  return {
    id,
    tasksFile: `openspec/changes/${id}/tasks.md`,
    proposal: `# ${id}`,
    design: null,
    specs: [],
    tasks,
  };
}
