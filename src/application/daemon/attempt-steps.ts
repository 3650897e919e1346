/**
 * One attempt at a task (SPEC §11), in small steps: the run, then the validation. Each step says
 * what it came to in a discriminated outcome, and the task loop (task-work.ts) handles each kind
 * in an exhaustive switch, as the run loop does with its `StepOutcome`.
 */
import { callText } from '../../domain/approvals.ts';
import type { Clock } from '../ports.ts';
import type { DaemonEvent } from './daemon-events.ts';
import type { TaskRunner, ValidationReport, Validator } from './daemon-ports.ts';
import type { DaemonTaskRecord } from './daemon-state.ts';
import { recordView } from './daemon-status.ts';

/** What one attempt came to. */
export type AttemptOutcome =
  /** Stopped (SIGINT/SIGTERM, or the run was cancelled): the tree goes back, the task stays pending. */
  | { readonly kind: 'cancelled' }
  /**
   * The run is parked on an approval (SPEC §19): no attempt spent yet; the daemon sets its edits
   * aside and goes on with other changes until the approval is answered.
   */
  | {
      readonly kind: 'parked';
      readonly runId: string;
      readonly approval: { readonly id: string; readonly call: string };
    }
  /** No model reachable: no attempt was spent; the daemon waits and tries again. */
  | { readonly kind: 'backend_down'; readonly message: string }
  /** The interrupted attempt's run cannot go on (why): no attempt was spent; the daemon starts it again. */
  | { readonly kind: 'not_resumable'; readonly reason: string }
  /** The attempt was spent and failed (the run, or the validation): the feedback goes to the next. */
  | { readonly kind: 'failed'; readonly feedback: string }
  /** The run succeeded and the validation passed: the task can be ticked and committed. */
  | {
      readonly kind: 'validated';
      readonly runId: string;
      readonly testsPassed: number | null;
      /** Tests failing at HEAD too: reported, not the task's doing. */
      readonly preexisting: readonly string[];
      /** Tests that failed, then passed when the validation ran again. */
      readonly flaky: readonly string[];
    };

/** What the run step came to: the attempt's outcome already, or a run that succeeded, to validate. */
export type RunStepOutcome =
  | Exclude<AttemptOutcome, { readonly kind: 'validated' }>
  | { readonly kind: 'succeeded'; readonly runId: string };

/** What an attempt reaches: the daemon's run and validation ports, its clock and its reports. */
export interface AttemptPorts {
  readonly runner: TaskRunner;
  readonly validator: Validator;
  readonly clock: Clock;
  emit(event: DaemonEvent): void;
  /** The files the work tree changes against the last commit: a run that changed none did nothing. */
  changedFiles(): Promise<readonly string[]>;
  /** Notes that a model answered (the backend is up), before the run's end is reported. */
  backendUp(): void;
}

/** Time spent on a task by kind, over all its attempts (task_done's figures). */
export interface TaskTimes {
  runMs: number;
  validationMs: number;
  clippyMs: number;
}

/** One attempt: the task's record (its figures are updated), its number and its task text. */
export interface AttemptInput {
  readonly record: DaemonTaskRecord;
  readonly attempt: number;
  readonly text: string;
  /** The run's id, in the state before the run starts. */
  readonly runId: string;
  /** Go on with the run `runId` a killed daemon left instead of starting one. */
  readonly resume: boolean;
  /** The model to ask for (escalation); undefined: the runner's own. */
  readonly model?: string | undefined;
  readonly times: TaskTimes;
  readonly signal: AbortSignal;
  /** What the validation is judged against (SPEC §11.1). */
  readonly judging: Judging;
}

/** How a validation is judged: against the tests failing at HEAD, with reruns for flaky tests. */
export interface Judging {
  /** Tests that fail at HEAD (the change's baseline): their failing is not the task's. */
  readonly baseline: ReadonlySet<string>;
  /** Times a failing validation is run again before the attempt is spent (default 1). */
  readonly reruns: number;
  /** The change's tasks.md: a run that changed only that (or nothing) did not do the task. */
  readonly tasksFile: string;
  /** A parent whose sub-tasks are done may change nothing: their work is its work. */
  readonly noEditOk: boolean;
}

/** Runs the specialist on the task text, then, if it succeeded, the validation. */
export async function attemptTask(ports: AttemptPorts, input: AttemptInput): Promise<AttemptOutcome> {
  const ran = await runStep(ports, input);
  if (ran.kind !== 'succeeded') return ran;
  if (!input.judging.noEditOk) {
    const changed = await ports.changedFiles();
    if (changed.every((file) => file === input.judging.tasksFile)) {
      return {
        kind: 'failed',
        feedback:
          `The run finished without changing any file${changed.length > 0 ? ' but tasks.md' : ''}: the task is not done. ` +
          'Make the change the task asks for in the code (and its tests); the fabric ticks the box itself.',
      };
    }
  }
  return validateStep(ports, input, ran.runId);
}

/**
 * The run: a backend that is down spends no attempt; a run that started is counted (attempts, run
 * ids, tokens) and reported, and one that did not succeed is a failed attempt with its status.
 */
export async function runStep(ports: AttemptPorts, input: AttemptInput): Promise<RunStepOutcome> {
  const { record, attempt, signal } = input;
  const start = ports.clock.now().getTime();
  const runner = ports.runner;
  const started = !input.resume
    ? await runner.run(input.text, signal, input.model, input.runId)
    : runner.resume === undefined
      ? ({ kind: 'not_resumable', reason: 'this daemon cannot resume runs' } as const)
      : await runner.resume(input.runId, signal);
  input.times.runMs += ports.clock.now().getTime() - start;
  if (started.kind === 'cancelled' || signal.aborted) return { kind: 'cancelled' };
  if (started.kind === 'not_resumable') return started;
  if (started.kind === 'backend_down') return { kind: 'backend_down', message: started.message };
  ports.backendUp();
  const { result } = started;
  if (result.status === 'awaiting_approval' && result.approval !== undefined) {
    // Not an attempt yet: it is counted (its tokens, its model) when the run ends after the answer.
    return {
      kind: 'parked',
      runId: result.run_id,
      approval: { id: result.approval.id, call: callText(result.approval) },
    };
  }
  record.attempts = attempt;
  record.run_in_flight = null;
  record.run_ids.push(result.run_id);
  record.models = [...(record.models ?? []), result.model];
  record.tokens += result.usage.total_tokens;
  const error = result.error === null ? null : `${result.error.code}: ${result.error.message}`;
  ports.emit({
    event: 'run_end',
    task: recordView(record),
    attempt,
    run_id: result.run_id,
    status: result.status,
    error,
  });
  if (result.status === 'cancelled') return { kind: 'cancelled' };
  if (result.status !== 'succeeded') {
    return {
      kind: 'failed',
      feedback: `The run ended "${result.status}"${error === null ? '' : ` (${error})`} without finishing the task.`,
    };
  }
  return { kind: 'succeeded', runId: result.run_id };
}

/** How a validation came out against the baseline: accepted, or the regressions that fail it. */
interface Verdict {
  readonly accepted: boolean;
  /** Failing tests that fail at HEAD too. */
  readonly preexisting: string[];
  /** Failing tests that passed at HEAD; null when the failure is not a test's (the build). */
  readonly regressions: string[] | null;
}

/** Accepted when nothing failed, or only tests that fail at HEAD too. */
export function judge(validation: ValidationReport, baseline: ReadonlySet<string>): Verdict {
  if (validation.ok) return { accepted: true, preexisting: [], regressions: [] };
  if (validation.failedTests === null) return { accepted: false, preexisting: [], regressions: null };
  const preexisting = validation.failedTests.filter((name) => baseline.has(name));
  const regressions = validation.failedTests.filter((name) => !baseline.has(name));
  return { accepted: regressions.length === 0 && preexisting.length > 0, preexisting, regressions };
}

/**
 * The validation commands on the tree the run left, judged against the baseline (SPEC §11.1): a
 * failure is run again (`reruns` times) before the attempt is spent, and a test that failed and
 * then passed is flaky. A failing attempt's feedback is the output, with the pre-existing
 * failures named as not the model's to fix.
 */
export async function validateStep(
  ports: AttemptPorts,
  input: AttemptInput,
  runId: string,
): Promise<AttemptOutcome> {
  const { record, attempt, signal, judging } = input;
  const failedBefore = new Set<string>();
  let validation: ValidationReport | null = null;
  let verdict: Verdict | null = null;
  for (let run = 0; run <= judging.reruns; run += 1) {
    const start = ports.clock.now().getTime();
    validation = await ports.validator.validate(signal);
    input.times.validationMs += ports.clock.now().getTime() - start;
    if (signal.aborted) return { kind: 'cancelled' };
    verdict = judge(validation, judging.baseline);
    // Only failing tests may be flaky: a build that failed (no test names) fails again the same.
    const rerun = !verdict.accepted && verdict.regressions !== null && run < judging.reruns;
    ports.emit({
      event: 'validation',
      task: recordView(record),
      attempt,
      ok: verdict.accepted,
      tests_passed: validation.testsPassed,
      report: validation.ok ? null : validation.report,
      summary: validation.ok ? null : validation.summary,
      preexisting: verdict.preexisting,
      rerun,
    });
    if (verdict.accepted || !rerun) break;
    for (const name of verdict.regressions ?? []) failedBefore.add(name);
  }
  if (validation === null || verdict === null || !verdict.accepted) {
    const preexisting = verdict?.preexisting ?? [];
    const excuse =
      preexisting.length === 0
        ? ''
        : `\n\nThese tests fail at HEAD too, before your work: not yours to fix, leave them: ${preexisting.join(', ')}`;
    return {
      kind: 'failed',
      feedback: `The validation commands failed:\n${validation?.report ?? ''}${excuse}`,
    };
  }
  const stillFailing = new Set(validation.failedTests ?? []);
  const flaky = [...failedBefore].filter((name) => !stillFailing.has(name)).sort();
  return {
    kind: 'validated',
    runId,
    testsPassed: validation.testsPassed,
    preexisting: verdict.preexisting,
    flaky,
  };
}
