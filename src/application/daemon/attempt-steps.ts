/**
 * One attempt at a task (SPEC §11), in small steps: the run, then the validation. Each step says
 * what it came to in a discriminated outcome, and the task loop (task-work.ts) handles each kind
 * in an exhaustive switch, as the run loop does with its `StepOutcome`.
 */
import type { Clock } from '../ports.ts';
import type { DaemonEvent } from './daemon-events.ts';
import type { TaskRunner, Validator } from './daemon-ports.ts';
import type { DaemonTaskRecord } from './daemon-state.ts';
import { recordView } from './daemon-status.ts';

/** What one attempt came to. */
export type AttemptOutcome =
  /** Stopped (SIGINT/SIGTERM, or the run was cancelled): the tree goes back, the task stays pending. */
  | { readonly kind: 'cancelled' }
  /** No model reachable: no attempt was spent; the daemon waits and tries again. */
  | { readonly kind: 'backend_down'; readonly message: string }
  /** The attempt was spent and failed (the run, or the validation): the feedback goes to the next. */
  | { readonly kind: 'failed'; readonly feedback: string }
  /** The run succeeded and the validation passed: the task can be ticked and committed. */
  | { readonly kind: 'validated'; readonly runId: string; readonly testsPassed: number | null };

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
  readonly times: TaskTimes;
  readonly signal: AbortSignal;
}

/** Runs the specialist on the task text, then, if it succeeded, the validation. */
export async function attemptTask(ports: AttemptPorts, input: AttemptInput): Promise<AttemptOutcome> {
  const ran = await runStep(ports, input);
  if (ran.kind !== 'succeeded') return ran;
  return validateStep(ports, input, ran.runId);
}

/**
 * The run: a backend that is down spends no attempt; a run that started is counted (attempts, run
 * ids, tokens) and reported, and one that did not succeed is a failed attempt with its status.
 */
export async function runStep(ports: AttemptPorts, input: AttemptInput): Promise<RunStepOutcome> {
  const { record, attempt, signal } = input;
  const start = ports.clock.now().getTime();
  const started = await ports.runner.run(input.text, signal);
  input.times.runMs += ports.clock.now().getTime() - start;
  if (started.kind === 'cancelled' || signal.aborted) return { kind: 'cancelled' };
  if (started.kind === 'backend_down') return { kind: 'backend_down', message: started.message };
  ports.backendUp();
  const { result } = started;
  record.attempts = attempt;
  record.run_ids.push(result.run_id);
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

/** The validation commands on the tree the run left; their output is the next attempt's feedback. */
export async function validateStep(
  ports: AttemptPorts,
  input: AttemptInput,
  runId: string,
): Promise<AttemptOutcome> {
  const { record, attempt, signal } = input;
  const start = ports.clock.now().getTime();
  const validation = await ports.validator.validate(signal);
  input.times.validationMs += ports.clock.now().getTime() - start;
  if (signal.aborted) return { kind: 'cancelled' };
  ports.emit({
    event: 'validation',
    task: recordView(record),
    attempt,
    ok: validation.ok,
    tests_passed: validation.testsPassed,
    report: validation.ok ? null : validation.report,
    summary: validation.ok ? null : validation.summary,
  });
  if (!validation.ok)
    return { kind: 'failed', feedback: `The validation commands failed:\n${validation.report}` };
  return { kind: 'validated', runId, testsPassed: validation.testsPassed };
}
