/**
 * The daemon's composition (SPEC §11): the completion daemon and its status reader wired to the
 * OpenSpec files, the git repository, the state file under the runs directory, the cargo checks
 * in the rust sandbox, the clock, and a fabric's runs.
 */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import process from 'node:process';
import {
  CompletionDaemon,
  type CompletionDaemonOptions,
  type DaemonOutcome,
} from '../application/daemon/completion-daemon.ts';
import type { StampedDaemonEvent } from '../application/daemon/daemon-events.ts';
import { type DaemonTaskSink, isDaemonTaskSink } from '../application/daemon/daemon-ports.ts';
import { DaemonStatusReader } from '../application/daemon/daemon-status-reader.ts';
import { cancelParkedRun } from '../application/approvals/cancel-parked.ts';
import { SpecialistTaskRunner } from '../application/daemon/specialist-task-runner.ts';
import type { RunObserver } from '../application/ports.ts';
import type { FabricConfig } from '../config/load.ts';
import { errorMessage, FabricError } from '../domain/errors.ts';
import { SandboxValidator } from '../infrastructure/cargo-checks/sandbox-validator.ts';
import { systemClock } from '../infrastructure/clock.ts';
import { daemonRunsDir, workTreeOf } from '../infrastructure/daemon/daemon-runs-dir.ts';
import { daemonRepos, StateFile } from '../infrastructure/daemon/state-file.ts';
import { GitRepository } from '../infrastructure/git/git-repository.ts';
import { OpenSpecCommand } from '../infrastructure/openspec/openspec-cli.ts';
import { OpenSpecFiles } from '../infrastructure/openspec/openspec-files.ts';
import { specialistSandbox } from '../infrastructure/packs/rust/rust-sandbox.ts';
import { pidState } from '../infrastructure/process/process-liveness.ts';
import { autoEscalation, wantsAuto } from '../application/models/auto-escalation.ts';
import { mergeCards } from '../application/models/shared-cards.ts';
import { FileModelCards } from '../infrastructure/runlog/model-card-files.ts';
import { createFabric, type Fabric } from './fabric.ts';

/** The daemon status of the repositories whose daemon state lies under this runs directory. */
export function createDaemonStatusReader(runsDir: string): DaemonStatusReader {
  // A runs directory inside a work tree: that repository's daemon kept its state in its git dir.
  const tree = workTreeOf(runsDir);
  const dirs = [runsDir, ...(tree === null ? [] : [daemonRunsDir(runsDir, tree)])];
  return new DaemonStatusReader({
    repos: async () => [...new Set((await Promise.all(dirs.map(daemonRepos))).flat())].sort(),
    state: (repo) => new StateFile(daemonRunsDir(runsDir, repo), repo),
    openspec: (repo) => new OpenSpecFiles(repo),
    isRunning: (owner) => owner.host === hostname() && pidState(owner.pid) === 'alive',
  });
}

/** What `fabric daemon` gives its daemon besides the config. */
export interface DaemonSetup {
  /** The repository, a real absolute path. */
  readonly repo: string;
  /** The model to ask for (`--model`, `daemon.model`); none: the specialist's. */
  readonly model: string | undefined;
  /** Where `model` came from, as the user would name it: `--model`, `LM_STUDIO_MODEL`, `daemon.model`. */
  readonly modelFrom?: string | undefined;
  /** Observers for each new run (live progress). */
  readonly observers: () => readonly RunObserver[];
  readonly onEvent: (event: StampedDaemonEvent) => void;
  /**
   * Told about process-wide trouble: the control database went away, or could not be opened for
   * `control.daemon_tasks` (once; the daemon keeps its state file only). Print it as it is.
   */
  readonly onDegraded: (message: string) => void;
  readonly options: CompletionDaemonOptions;
}

/** A daemon wired for a repository; `run` closes what it opened when it ends. */
export interface WiredDaemon {
  run(signal: AbortSignal): Promise<DaemonOutcome>;
}

/**
 * Builds the completion daemon for a config and a repository. Throws before anything is opened
 * when the daemon's specialist is not defined or a validation command would be refused.
 */
export async function createCompletionDaemon(
  configured: FabricConfig,
  setup: DaemonSetup,
): Promise<WiredDaemon> {
  const { repo } = setup;
  // Runs, state and database outside the work tree whatever the config: git status stays empty.
  const config = { ...configured, runs_dir: daemonRunsDir(configured.runs_dir, repo) };
  const specialist = config.daemon.specialist;
  const specialistConfig = config.specialists[specialist];
  if (specialistConfig === undefined) {
    throw new FabricError(
      'specialist_unknown',
      `daemon.specialist is "${specialist}", which the config does not define. Add it under specialists, or change daemon.specialist.`,
    );
  }
  const validator = await SandboxValidator.create({
    repo,
    commands: config.daemon.validate,
    sandbox: specialistSandbox(specialistConfig),
    options: specialistConfig.options,
    runsDir: config.runs_dir,
    configFile: config.source,
  });
  const fabric = createFabric(config, { onDegraded: setup.onDegraded });
  const runner = new SpecialistTaskRunner(
    {
      run: (request) => fabric.run(request),
      resume: (request) => fabric.resume(request),
      refreshCatalog: () => fabric.refreshCatalog(),
      parking: {
        approvals: fabric.approvals,
        runEvents: async (runId) => (await fabric.runLogStore.read(runId)).events,
        cancelParked: (runId) =>
          cancelParkedRun(
            { runLogStore: fabric.runLogStore, approvals: fabric.approvals, now: () => new Date() },
            runId,
            'daemon',
          ),
      },
    },
    {
      specialist,
      workspace: repo,
      model: setup.model,
      modelFrom: setup.modelFrom,
      observers: setup.observers,
    },
  );
  const options = await measuredOrder(fabric, configured.runs_dir, specialist, setup.options).catch(
    async (error: unknown) => {
      await fabric.close();
      throw error;
    },
  );
  const daemon = new CompletionDaemon(
    {
      sink: controlPlaneSink(fabric, setup.onDegraded),
      repo,
      openspec: new OpenSpecFiles(repo),
      // OpenSpec's own CLI when it is on the PATH: a finished change is validated (and archived).
      openspecCli: (await OpenSpecCommand.find(repo)) ?? undefined,
      git: new GitRepository(repo, [config.runs_dir]),
      runner,
      validator,
      // Clippy's warnings before and after each task, through the same sandbox (where allowed).
      clippy: validator,
      state: new StateFile(config.runs_dir, repo),
      clock: systemClock,
      owner: { pid: process.pid, host: hostname() },
      onEvent: setup.onEvent,
    },
    options,
  );
  return { run: (signal) => daemon.run(signal).finally(() => fabric.close()) };
}

/**
 * `daemon.models: auto` (SPEC §20): the escalation ordered by the model cards, best first, for the
 * daemon's specialist. The cards are read where `fabric models probe` wrote them: the config's runs
 * directory (the daemon's own may be in the git directory), and the control plane.
 */
async function measuredOrder(
  fabric: Fabric,
  runsDir: string,
  specialist: string,
  options: CompletionDaemonOptions,
): Promise<CompletionDaemonOptions> {
  if (!wantsAuto(options.models)) return options;
  const [probes, daemonCards, configCards] = await Promise.all([
    fabric.catalog.probe(),
    fabric.modelCards({ quiet: true }).list(),
    resolve(runsDir) === resolve(fabric.config.runs_dir) ? [] : new FileModelCards(runsDir).list(),
  ]);
  const cards = mergeCards(configCards, daemonCards);
  const escalation = autoEscalation(probes, options.models ?? [], { cards, specialist });
  return { ...options, models: escalation.models, escalation };
}

/**
 * control.daemon_tasks, when the control plane is on; the state file is the record either way.
 * Opened at the first task record, after the repository checks: a refused start opens no database.
 */
function controlPlaneSink(fabric: Fabric, onDegraded: (message: string) => void): DaemonTaskSink {
  let told = false;
  return {
    async recordDaemonTask(repoDir, task) {
      const store = await fabric.controlStore().catch((error: unknown) => {
        if (!told) {
          told = true;
          onDegraded(
            `control plane unavailable (db_off): ${errorMessage(error)}; the daemon keeps its state file only`,
          );
        }
        return null;
      });
      if (isDaemonTaskSink(store)) await store.recordDaemonTask(repoDir, task);
    },
  };
}
