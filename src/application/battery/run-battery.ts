/**
 * The battery runner (SPEC §12): every cell an ordinary run in its own copy of the workspace,
 * then its checks; at most `concurrency` cells at once, a cell counting from its run's start to
 * the end of its checks. It knows tasks, models and ports — never a server.
 */
import { errorMessage } from '../../domain/errors.ts';
import type { Clock } from '../ports.ts';
import type { BatteryRecorder, CellRunner, CellWorkspaces, ExpectChecks } from './battery-ports.ts';
import {
  type BatteryPlan,
  type BatteryTaskSpec,
  type CellKey,
  type CellResult,
  cellId,
  planCells,
} from './battery-types.ts';
import { type CellExecutor, LocalCellExecutor } from './cell-executor.ts';
import { CellSchedule } from './cell-schedule.ts';
import { INFRASTRUCTURE_ATTEMPTS, isInfrastructureCode } from './infrastructure-faults.ts';

/** What the runner needs. */
export interface BatteryDeps {
  readonly runner: CellRunner;
  readonly workspaces: CellWorkspaces;
  readonly checks: ExpectChecks;
  readonly recorder: BatteryRecorder;
  readonly clock: Clock;
  /**
   * Where cells' runs and checks happen; default: in this process, through `runner`,
   * `workspaces` and `checks`. With the Postgres queue, on the workers.
   */
  readonly executor?: CellExecutor;
}

export interface RunBatteryOptions {
  readonly concurrency: number;
  /**
   * The servers the cells share (default: `concurrency`): at most this many models run at once,
   * each model's cells one after another (SPEC §12.1), so a server loads each model once.
   */
  readonly servers?: number;
  /** Cells already done (`--resume`): kept as they are, except those that could not run. */
  readonly done?: readonly CellResult[];
  readonly signal: AbortSignal;
  readonly onCellStart?: (cell: CellKey) => void;
  readonly onCellEnd?: (result: CellResult) => void;
}

/** How a battery went: every cell done so far, and whether Ctrl-C stopped it first. */
export interface BatteryOutcome {
  readonly results: readonly CellResult[];
  readonly interrupted: boolean;
}

/**
 * The cells of a plan still to run: not done, done without a run, or failed by their
 * infrastructure (a server down, a model missing: SPEC §12.1).
 */
export function pendingCells(plan: BatteryPlan, done: readonly CellResult[]): CellKey[] {
  const finished = new Set(
    done.filter((r) => r.status !== 'not_run' && r.infrastructure !== true).map((r) => cellId(r)),
  );
  return planCells(plan).filter((cell) => !finished.has(cellId(cell)));
}

/** Runs the cells of `plan` not yet done. Resolves when they have all ended or Ctrl-C stopped them. */
export async function runBattery(
  plan: BatteryPlan,
  deps: BatteryDeps,
  options: RunBatteryOptions,
): Promise<BatteryOutcome> {
  const done = new Map((options.done ?? []).map((result) => [cellId(result), result]));
  const pending = pendingCells(plan, options.done ?? []);
  const schedule = new CellSchedule(pending, options.servers ?? options.concurrency);
  const tasks = new Map(plan.tasks.map((task) => [task.id, task]));
  const executor = deps.executor ?? new LocalCellExecutor(deps.runner, deps.workspaces, deps.checks);
  const worker = async () => {
    let current: string | undefined;
    for (;;) {
      const cell = schedule.next(current);
      // Done with a model's cells (no worker holds it, none left): unload it where this process
      // loaded it, so the next model has the memory.
      if (current !== undefined && cell?.model !== current && schedule.finished(current))
        await deps.runner.release?.(current);
      if (cell === undefined) return;
      current = cell.model;
      if (options.signal.aborted) {
        schedule.release(current);
        return;
      }
      options.onCellStart?.(cell);
      // A cell its infrastructure failed is tried again, a bounded number of times.
      let result: CellResult | undefined;
      for (let attempt = 1; attempt <= INFRASTRUCTURE_ATTEMPTS; attempt++) {
        result = await runCell(plan, tasks.get(cell.task)!, cell, deps, executor, options.signal);
        if (result === undefined) break;
        result = { ...result, attempts: attempt };
        if (result.infrastructure !== true) break;
      }
      // A cell Ctrl-C stopped is not done: `--resume` runs it again. Nothing half-recorded.
      if (result === undefined) continue;
      done.set(cellId(cell), result);
      await deps.recorder.cellEnded(result);
      options.onCellEnd?.(result);
    }
  };
  const workers = Math.max(1, Math.min(options.concurrency, pending.length));
  await Promise.all(Array.from({ length: workers }, worker));
  const order = planCells(plan).map(cellId);
  const results = order.flatMap((id) => done.get(id) ?? []);
  return { results, interrupted: options.signal.aborted };
}

/** One cell: its model's fitness, then its run and checks (wherever the executor runs them). */
async function runCell(
  plan: BatteryPlan,
  spec: BatteryTaskSpec,
  cell: CellKey,
  deps: BatteryDeps,
  executor: CellExecutor,
  signal: AbortSignal,
): Promise<CellResult | undefined> {
  const startedAt = deps.clock.now();
  const started = startedAt.getTime();
  const finish = (fields: Partial<CellResult> & Pick<CellResult, 'status' | 'passed'>): CellResult => {
    const now = deps.clock.now();
    return {
      ...cell,
      failed_check: null,
      error: null,
      run_id: null,
      steps: 0,
      tokens: 0,
      checks: [],
      infrastructure: false,
      ...fields,
      seconds: Math.round((now.getTime() - started) / 10) / 100,
      started_at: startedAt.toISOString(),
      ended_at: now.toISOString(),
    };
  };
  const notRun = (error: string, infrastructure: boolean): CellResult =>
    finish({ status: 'not_run', passed: false, failed_check: 'run', error, infrastructure });

  // A model unfit for the cells is its own failing; one missing, or no catalog, the infrastructure's.
  let unusable: string | null;
  try {
    unusable = await deps.runner.unusable(cell.model, signal);
  } catch (error) {
    if (signal.aborted) return undefined;
    return notRun(errorMessage(error), true);
  }
  if (signal.aborted) return undefined;
  if (unusable !== null) return notRun(unusable, false);
  const outcome = await executor.execute(
    {
      cell,
      spec,
      maxSteps: plan.maxSteps,
      tags: { battery: plan.id, task: cell.task, model: cell.model, repeat: String(cell.repeat) },
      hasWorkspace: plan.workspace !== undefined,
    },
    signal,
  );
  switch (outcome.kind) {
    case 'stopped':
      return undefined;
    case 'not_run':
      return notRun(outcome.error, outcome.infrastructure !== false);
    case 'ran': {
      if (outcome.run.status === 'failed' && isInfrastructureCode(outcome.run.error_code)) {
        return finish({
          status: 'failed',
          passed: false,
          failed_check: 'run',
          error: outcome.run.error ?? `the run failed (${outcome.run.error_code})`,
          run_id: outcome.run.run_id,
          steps: outcome.run.steps,
          tokens: outcome.run.tokens,
          checks: outcome.checks,
          infrastructure: true,
        });
      }
      const failed = outcome.checks.find((check) => check.outcome === 'failed');
      return finish({
        status: outcome.run.status,
        passed: failed === undefined,
        failed_check: failed?.check ?? null,
        error: failed === undefined ? null : failed.message,
        run_id: outcome.run.run_id,
        steps: outcome.run.steps,
        tokens: outcome.run.tokens,
        checks: outcome.checks,
        ...(outcome.run.facts === undefined ? {} : { facts: outcome.run.facts }),
      });
    }
  }
}
