/**
 * Where a battery cell's run and its `expect` checks happen (SPEC §12): in this process
 * (`LocalCellExecutor`, a copy of the workspace per cell), or on a `fabric worker` through the
 * queue (`QueuedCellExecutor`, queued-cells.ts). Either way the runner gets the same outcome.
 */
import { FabricError, errorMessage } from '../../domain/errors.ts';
import type { RunStatus } from '../../domain/run-result.ts';
import type { CellRunner, CellWorkspace, CellWorkspaces, ExpectChecks } from './battery-ports.ts';
import type { BatteryTaskSpec, CellKey, CheckOutcome } from './battery-types.ts';
import { type RunFacts, runFacts } from './run-facts.ts';

/** What a cell's run came to: what the matrix shows of it. Plain data (a worker sends it back). */
export interface CellRun {
  readonly run_id: string;
  readonly status: RunStatus;
  readonly steps: number;
  readonly tokens: number;
  /** The run's error message, when it ended with one. */
  readonly error: string | null;
  /** The run's error code (`backend_unavailable`, ...), when it ended with one. */
  readonly error_code?: string | null;
  /** What its runlog says of how the model worked; absent when it could not be read. */
  readonly facts?: RunFacts;
}

/**
 * A cell, executed: its run and checks; `not_run` when no run could start (why); `stopped` when
 * Ctrl-C stopped it first (not done: `--resume` runs it again).
 */
export type CellOutcome =
  | { readonly kind: 'ran'; readonly run: CellRun; readonly checks: readonly CheckOutcome[] }
  | {
      readonly kind: 'not_run';
      readonly error: string;
      /** False when the model itself is why (a server saying it lacks tools); else the infrastructure's. */
      readonly infrastructure?: boolean;
    }
  | { readonly kind: 'stopped' };

/** One cell to execute. */
export interface CellWork {
  readonly cell: CellKey;
  readonly spec: BatteryTaskSpec;
  readonly maxSteps: number | undefined;
  /** Recorded in the run's `run_start`. */
  readonly tags: Readonly<Record<string, string>>;
  /** Whether the battery has a workspace (each cell then gets its own copy). */
  readonly hasWorkspace: boolean;
}

/** Runs a cell's run and then its checks, in the cell's own workspace. */
export interface CellExecutor {
  execute(work: CellWork, signal: AbortSignal): Promise<CellOutcome>;
}

/** A cell in this process: a fresh copy of the workspace, an ordinary run, the checks, the copy removed. */
export class LocalCellExecutor implements CellExecutor {
  readonly #runner: Pick<CellRunner, 'run' | 'events'>;
  readonly #workspaces: CellWorkspaces;
  readonly #checks: ExpectChecks;

  constructor(runner: Pick<CellRunner, 'run' | 'events'>, workspaces: CellWorkspaces, checks: ExpectChecks) {
    this.#runner = runner;
    this.#workspaces = workspaces;
    this.#checks = checks;
  }

  /** The run's facts from its runlog; undefined when there is no reader or it cannot be read. */
  async #facts(runlog: string): Promise<RunFacts | undefined> {
    if (this.#runner.events === undefined) return undefined;
    try {
      return runFacts(await this.#runner.events(runlog));
    } catch {
      return undefined;
    }
  }

  async execute(work: CellWork, signal: AbortSignal): Promise<CellOutcome> {
    let workspace: CellWorkspace | undefined;
    try {
      if (work.hasWorkspace) workspace = await this.#workspaces.prepare(work.cell, signal);
      let run: CellRun;
      try {
        const result = await this.#runner.run({
          task: work.spec.task,
          model: work.cell.model,
          workspace: workspace?.path,
          maxSteps: work.maxSteps,
          tags: work.tags,
          signal,
        });
        run = {
          run_id: result.run_id,
          status: result.status,
          steps: result.steps,
          tokens: result.usage.total_tokens,
          error: result.error?.message ?? null,
          error_code: result.error?.code ?? null,
        };
        const facts = await this.#facts(result.runlog);
        if (facts !== undefined) run = { ...run, facts };
      } catch (error) {
        if (signal.aborted) return { kind: 'stopped' };
        return {
          kind: 'not_run',
          error: error instanceof FabricError ? error.message : `Unexpected error: ${errorMessage(error)}`,
          infrastructure: !(error instanceof FabricError && error.code === 'model_lacks_tools'),
        };
      }
      if (signal.aborted && run.status === 'cancelled') return { kind: 'stopped' };
      const checks = await runChecks(work.spec, run, workspace?.path, this.#checks, signal);
      if (signal.aborted && checks.some((check) => check.outcome === 'failed')) return { kind: 'stopped' };
      return { kind: 'ran', run, checks };
    } catch (error) {
      if (signal.aborted) return { kind: 'stopped' };
      return { kind: 'not_run', error: `The cell could not be prepared: ${errorMessage(error)}` };
    } finally {
      await workspace?.dispose();
    }
  }
}

/**
 * The status first; commands and files only when the run ended as expected and there is a
 * workspace to check (`checks` is then required).
 */
export async function runChecks(
  spec: BatteryTaskSpec,
  run: Pick<CellRun, 'status' | 'error'> & Partial<Pick<CellRun, 'steps' | 'tokens' | 'facts'>>,
  workspace: string | undefined,
  checks: ExpectChecks | undefined,
  signal: AbortSignal,
): Promise<CheckOutcome[]> {
  const expected = spec.expect.status;
  const statusOk = run.status === expected;
  const why = run.error === null ? '' : ` (${run.error})`;
  const outcomes: CheckOutcome[] = [
    {
      check: 'status',
      outcome: statusOk ? 'passed' : 'failed',
      message: statusOk ? `the run ${run.status}` : `expected ${expected}, the run ended ${run.status}${why}`,
    },
  ];
  const skip = (check: string): CheckOutcome => ({
    check,
    outcome: 'skipped',
    message: 'not checked: the run did not end as expected',
  });
  for (const command of spec.expect.commands) {
    const check = `command: ${command}`;
    if (!statusOk || workspace === undefined || checks === undefined) outcomes.push(skip(check));
    else outcomes.push(await checks.command(workspace, command, signal));
  }
  for (const [path, text] of Object.entries(spec.expect.files_contain)) {
    const check = `files_contain: ${path}`;
    if (!statusOk || workspace === undefined || checks === undefined) outcomes.push(skip(check));
    else outcomes.push(await checks.fileContains(workspace, path, text));
  }
  outcomes.push(...runChecksOf(spec, run));
  return outcomes;
}

/**
 * The checks on how the run went (SPEC §12.1): `tool_used`, `tool_not_used` (from its runlog),
 * `max_steps`, `max_seconds`, `max_tokens`. Checked whatever the run's status; a check whose
 * figure is unknown (no runlog) is skipped.
 */
function runChecksOf(
  spec: BatteryTaskSpec,
  run: Partial<Pick<CellRun, 'steps' | 'tokens' | 'facts'>>,
): CheckOutcome[] {
  const { expect } = spec;
  const outcomes: CheckOutcome[] = [];
  const unknown = (check: string): CheckOutcome => ({
    check,
    outcome: 'skipped',
    message: 'not checked: the run’s runlog could not be read',
  });
  const called = run.facts?.tools_called;
  const list = (names: string | readonly string[] | undefined) =>
    names === undefined ? [] : typeof names === 'string' ? [names] : names;
  for (const tool of list(expect.tool_used)) {
    const check = `tool_used: ${tool}`;
    if (called === undefined) outcomes.push(unknown(check));
    else
      outcomes.push(
        called.includes(tool)
          ? { check, outcome: 'passed', message: `the run called ${tool}` }
          : {
              check,
              outcome: 'failed',
              message: `the run never called ${tool} (it called: ${called.length === 0 ? 'no tool' : called.join(', ')})`,
            },
      );
  }
  for (const tool of list(expect.tool_not_used)) {
    const check = `tool_not_used: ${tool}`;
    if (called === undefined) outcomes.push(unknown(check));
    else
      outcomes.push(
        called.includes(tool)
          ? { check, outcome: 'failed', message: `the run called ${tool}, which it must not` }
          : { check, outcome: 'passed', message: `the run did not call ${tool}` },
      );
  }
  const most = (check: string, limit: number | undefined, value: number | null | undefined, unit: string) => {
    if (limit === undefined) return;
    if (value === undefined || value === null) outcomes.push(unknown(check));
    else
      outcomes.push(
        value <= limit
          ? { check, outcome: 'passed', message: `${value} ${unit}, at most ${limit}` }
          : { check, outcome: 'failed', message: `${value} ${unit}, more than the ${limit} allowed` },
      );
  };
  most('max_steps', expect.max_steps, run.steps, 'steps');
  most('max_seconds', expect.max_seconds, run.facts?.seconds, 's');
  most('max_tokens', expect.max_tokens, run.tokens, 'tokens');
  return outcomes;
}
