/**
 * The composition root shared by the CLI, the HTTP API and the MCP server: it builds the
 * adapters from the config and injects them into the application.
 */
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import process from 'node:process';
import type { BackendProbe, CatalogModel, ChatClient } from '../application/ports.ts';
import type { ModelCatalog, RunObserver } from '../application/ports.ts';
import type { ControlStore } from '../application/control/control-ports.ts';
import type { ProcessLiveness } from '../application/runs/liveness-ports.ts';
import { RequestLimiter } from '../application/run/request-limiter.ts';
import type { RunRequest } from '../application/run/run-request.ts';
import type { KeptOutputs } from '../application/run/output-budget.ts';
import { RunStarter } from '../application/run/start-run.ts';
import { type ResumeRequest, resumeRun } from '../application/run/resume-run.ts';
import { GitFingerprint } from '../infrastructure/workspace/git-fingerprint.ts';
import { type RunLogReader, RunReadModel } from '../application/runs/run-read-model.ts';
import type { ModelCard, ModelCardStore } from '../application/models/model-card.ts';
import type { ModelChoice } from '../application/models/resolve-model.ts';
import { type Environment, readEnvironment } from '../config/env.ts';
import type { FabricConfig } from '../config/load.ts';
import { FabricError } from '../domain/errors.ts';
import type { RunResult } from '../domain/run-result.ts';
import type { ControlPlane } from '../infrastructure/control/control-plane.ts';
import type { QueueServices } from '../infrastructure/queue/open-run-queue.ts';
import {
  openFabricControlPlane,
  openFabricQueue,
  requestProblem,
  traceWhenEnded,
} from './fabric-resources.ts';
import { LlmBackends } from '../infrastructure/llm/llm-backends.ts';
import { createMcpWrap } from '../infrastructure/mcp/mcp-wrap.ts';
import { checkWorkspace } from '../infrastructure/registry/check-workspace.ts';
import { ConfigRegistry } from '../infrastructure/registry/config-registry.ts';
import { BUILTIN_PACKS } from '../infrastructure/registry/builtin-packs.ts';
import { FileRunLogStore } from '../infrastructure/runlog/file-run-log-store.ts';
import { FileRunInboxes } from '../infrastructure/runlog/file-run-inbox.ts';
import { FileApprovalStore } from '../infrastructure/runlog/file-approval-store.ts';
import { MergedRunLogs } from '../infrastructure/runlog/merged-run-logs.ts';
import { modelCardsIn } from '../infrastructure/runlog/model-card-files.ts';
import { FileKeptOutputs } from '../infrastructure/runlog/kept-outputs.ts';
import { LocalProcessLiveness } from '../infrastructure/runlog/process-liveness.ts';
import { lockWorkspace } from '../infrastructure/workspace/workspace-lock.ts';
import { systemClock } from '../infrastructure/clock.ts';
import { FABRIC_VERSION } from './version.ts';
import type { SpanExporter } from '../application/telemetry/span-record.ts';
import { spanExporterFor } from './telemetry.ts';
import type { RunReadModelOptions } from './run-read-options.ts';

export type { RunReadModelOptions } from './run-read-options.ts';

/** This process, as the owner of the runs it makes. */
const RUN_OWNER = { pid: process.pid, host: hostname() };

/** What a Fabric takes besides its config. */
export interface FabricOptions {
  /** The environment stdio MCP servers start from (only PATH and HOME); default: the process's. */
  readonly env?: Environment;
  /**
   * How long the process lives. `server` (the default: `fabric serve`, `fabric mcp`, embedding
   * applications) holds the embedded control database while it runs and writes into it the
   * runlogs other processes wrote (SPEC §7). `one_shot` (`fabric run`) leaves the embedded
   * database closed — booting it would cost a short command more than its run — and its runs
   * reach it from their runlogs when a server, `fabric runs` or `fabric control` next opens it;
   * a Postgres store is mirrored to live either way.
   */
  readonly lifetime?: 'server' | 'one_shot';
  /**
   * Told once about process-wide trouble (the control database went away); runs hear it too.
   * Each message says what it is about (`control plane unavailable (db_off) …`): print it as it is.
   */
  readonly onDegraded?: (message: string) => void;
  /**
   * Runs directories read beside `runs_dir`, never written: `fabric serve` moved out of a work
   * tree still lists and shows the runs `fabric run` wrote into its `./runs` (issue 34).
   */
  readonly alsoReads?: readonly string[];
}

/**
 * Builds the fabric for a config: the one composition root (SPEC §10). The process-wide
 * resources — the model backends' catalog and server pool, the request limiter, the control
 * store and its mirror — are made once here and shared by every run of the process; `close()`
 * waits for the runs in progress and releases them.
 */
export function createFabric(config: FabricConfig, options: FabricOptions = {}): Fabric {
  return new Fabric(config, options);
}

/** The fabric's services for one config; build it with `createFabric`. */
export class Fabric {
  readonly config: FabricConfig;
  readonly registry: ConfigRegistry;
  /** Where this fabric's runs write their runlogs (`runs_dir`). */
  readonly runLogStore: FileRunLogStore;
  /** Each run's inbox (SPEC §19 steering, ADR 0019), beside its runlog. */
  readonly runInboxes: FileRunInboxes;
  /** Approvals and grants (SPEC §19, ADR 0017), under the runs directory. */
  readonly approvals: FileApprovalStore;
  /** The runlogs it reads: its own, then those of `alsoReads` (the listings, the viewer, the API). */
  readonly runLogs: RunLogReader;
  readonly catalog: ModelCatalog;
  /** Caps model requests in flight across every run of this Fabric (`llm.max_concurrent_requests`). */
  readonly limiter: RequestLimiter;
  readonly #llm: LlmBackends;
  /** The run use case, wired to this fabric's adapters. */
  readonly #runs: RunStarter;
  /** Whole outputs of results cut to fit a window, beside each run's runlog (SPEC §17). */
  readonly #kept: KeptOutputs;
  readonly #options: FabricOptions;
  /** Where each run's trace goes when it ends (SPEC §21); null with telemetry off. */
  readonly #spans: SpanExporter | null;
  /** Observers of every run of this fabric (the server's metrics). */
  readonly #observers: RunObserver[] = [];
  /** The control plane, opened with the first run (or `controlStore()`); null when disabled. */
  #control: Promise<ControlPlane | null> | undefined;
  /** The run queue and worker registry (`queue: postgres`), opened on first use. */
  #queue: Promise<QueueServices> | undefined;
  readonly #inflight = new Set<Promise<unknown>>();
  /** Runs are numbered as they start: the limiter serves earlier runs first. */
  #runsStarted = 0;
  #closing: Promise<void> | null = null;

  constructor(config: FabricConfig, options: FabricOptions = {}) {
    this.config = config;
    this.#options = options;
    this.registry = new ConfigRegistry({
      specialists: config.specialists,
      baseDir: config.baseDir,
      builtins: BUILTIN_PACKS,
      policy: config.policy.rules,
      // The run record and the config in use are out of every pack's reach (SPEC §6).
      settings: {
        searxngUrl: config.search.searxng_url,
        runsDir: config.runs_dir,
        configFile: config.source,
      },
      // Attaches a specialist's mcp_servers (a no-op when it has none); pack builders know nothing of it.
      wrap: createMcpWrap({
        hostEnv: options.env ?? readEnvironment(),
        baseDir: config.baseDir,
        clientVersion: FABRIC_VERSION,
      }),
    });
    this.runLogStore = new FileRunLogStore(config.runs_dir, systemClock);
    this.runInboxes = new FileRunInboxes(config.runs_dir);
    this.approvals = new FileApprovalStore(config.runs_dir);
    const others = (options.alsoReads ?? []).filter((dir) => resolve(dir) !== this.runLogStore.runsDir);
    this.runLogs =
      others.length === 0
        ? this.runLogStore
        : new MergedRunLogs([this.runLogStore, ...others.map((dir) => new FileRunLogStore(dir))]);
    // LM Studio (servers pooled) and Ollama, probed concurrently, cached, with health-aware routing.
    this.#llm = new LlmBackends(config.llm);
    this.catalog = this.#llm.catalog;
    this.limiter = new RequestLimiter(config.llm.max_concurrent_requests);
    this.#kept = new FileKeptOutputs(config.runs_dir);
    this.#spans = spanExporterFor(config);
    const registry = this.registry;
    const llm = this.#llm;
    this.#runs = new RunStarter({
      specialists: {
        config: (name) => registry.config(name),
        checkWorkspace: (name, workspace, requested) => checkWorkspace(name, resolve(workspace), requested),
        buildPack: (name, workspace) => registry.getPack(name, workspace === undefined ? {} : { workspace }),
      },
      models: {
        probe: (signal, onProgress) => llm.catalog.probe(signal, onProgress),
        chatClientFor: (choice, resolve, signal) => llm.chatClientFor(choice, resolve, signal),
        loadAt: (choice, contextLength, signal) => llm.loadAt(choice, contextLength, signal),
        // A run's control plane says once when it is down (its mirror): the cards' read stays quiet.
        cards: () => this.modelCards({ quiet: true }).list(),
      },
      locks: { lock: lockWorkspace },
      mirror: () => this.#controlPlane(),
      runLogStore: this.runLogStore,
      outputs: this.#kept,
      limiter: this.limiter,
      clock: systemClock,
      owner: RUN_OWNER,
      // The run's own git directory beside its runlog; the runs directory is never part of it.
      fingerprints: (workspace, runId) =>
        new GitFingerprint(workspace, join(config.runs_dir, runId, 'fingerprint.git'), [config.runs_dir]),
      inboxes: (runId, resumed) => this.runInboxes.reader(runId, { fromEnd: resumed }),
      approvals: this.approvals,
      settings: {
        onApproval: config.policy.on_approval,
        approvalTimeoutS: config.policy.approval_timeout_s,
        aliases: config.llm.models,
        maxSteps: config.loop.max_steps,
        budgetS: config.loop.budget_s,
        recoverTextToolCalls: config.loop.recover_text_tool_calls,
        stuckRepeats: config.loop.stuck_repeats,
        configDigest: config.digest,
        fabricVersion: FABRIC_VERSION,
        profiles: config.profiles,
        ...(config.llm.context_length === undefined ? {} : { contextLength: config.llm.context_length }),
      },
    });
  }

  /** Resolves the model for a specialist: `--model`, else its configured model (aliases expanded), else the best available. */
  chooseModel(specialist: string, flagModel: string | undefined, signal?: AbortSignal): Promise<ModelChoice> {
    return this.#runs.chooseModel(specialist, flagModel, signal);
  }

  /** The model these probes give a specialist (or just `--model`), by the same rules as a run; no probing. */
  chooseModelFrom(
    probes: readonly BackendProbe[],
    specialist: string | undefined,
    flagModel: string | undefined,
    cards: readonly ModelCard[] = [],
  ): ModelChoice {
    return this.#runs.chooseFrom(probes, specialist, flagModel, cards);
  }

  /** The model cards (SPEC §20): the runs directory's files, and the control plane's when it has one. */
  modelCards(options: { readonly quiet?: boolean } = {}): ModelCardStore {
    return modelCardsIn(
      this.config.runs_dir,
      () => this.controlStore(),
      options.quiet === true ? undefined : this.#options.onDegraded,
    );
  }

  /** A client for this model's own server, without failover: what a probe measures (SPEC §20). */
  modelClientFor(model: CatalogModel, signal?: AbortSignal): Promise<ChatClient | undefined> {
    return this.#llm.clientFor(model, signal);
  }

  /** The whole outputs runs kept of results cut to fit their window (the viewer shows them). */
  keptOutputs(): KeptOutputs {
    return this.#kept;
  }

  /** A model id or an alias from `llm.models`, as the id it stands for (the one expansion). */
  expandModelAlias(name: string): string {
    return this.#runs.expandAlias(name);
  }

  /** A new run id, for callers that must know it before the run starts (the HTTP hub, the queue). */
  newRunId(): string {
    return this.#runs.newRunId();
  }

  /**
   * Checks a request's specialist and workspace as a run would before anything else (SPEC §2):
   * for callers that hand the run to someone else (the queue). Returns the run's workspace.
   */
  validateRun(request: Pick<RunRequest, 'specialist' | 'workspace'>): Promise<string | undefined> {
    return this.#runs.validate(request);
  }

  /**
   * Unloads a model from the LM Studio servers this fabric loaded it on (at a run's window),
   * never one loaded by hand: a battery does so after a model's cells (SPEC §12.1).
   */
  unloadLoadedModel(model: string): Promise<string[]> {
    return this.#llm.unloadLoaded(model);
  }

  /** Forgets what the backends were last seen to have, so the next run asks them again. */
  refreshCatalog(): void {
    this.#llm.catalog.invalidate();
  }

  /**
   * The process's control store (opened on first use), or null when the control plane is
   * disabled, or embedded in a `one_shot` process.
   */
  controlStore(): Promise<ControlStore | null> {
    return this.#controlPlane().then((plane) => plane?.store ?? null);
  }

  /**
   * The read model of runs over this fabric's runlogs and its control plane (the
   * process's one store, where a worker's runs and the queued ones are).
   */
  runReadModel(options: RunReadModelOptions = {}): RunReadModel {
    const liveness = options.liveness ?? new LocalProcessLiveness();
    const mode = options.control ?? 'always';
    const control =
      mode === 'never'
        ? undefined
        : async () => (mode === 'queue' && (await this.runQueue()) === null ? null : this.controlStore());
    return new RunReadModel({
      runLogs: this.runLogs,
      live: options.live,
      control,
      controlListing: options.listControlRuns === true ? control : undefined,
      check: () => ({ liveness, now: new Date() }),
      controlRowDecides: options.controlRowDecides,
      cacheEnded: options.cacheEnded,
    });
  }

  /**
   * The run queue and the worker registry, in the control plane's Postgres, when the config
   * says `queue: postgres` (`POST /v1/runs` enqueues, `fabric worker`s run); null when
   * runs execute in-process. Opened once, on first use; an open that failed is tried again.
   */
  runQueue(): Promise<QueueServices | null> {
    const dsn = this.config.control.dsn;
    if (this.config.queue !== 'postgres' || dsn === undefined) return Promise.resolve(null);
    if (this.#closing !== null)
      return Promise.reject(
        new FabricError('usage', 'This fabric is closed; create another to use the queue.'),
      );
    this.#queue ??= openFabricQueue(dsn, this.config, this.#options.onDegraded).catch((error: unknown) => {
      this.#queue = undefined;
      throw error;
    });
    return this.#queue;
  }

  /** The process's control plane; opened once, on first use. */
  #controlPlane(): Promise<ControlPlane | null> {
    this.#control ??= this.#openControlPlane();
    return this.#control;
  }

  #openControlPlane(): Promise<ControlPlane | null> {
    return openFabricControlPlane(this.config, this.runLogStore, this.#options);
  }

  /** Runs a task end to end: pack, model, loop. Errors before the run starts are thrown. */
  run(request: RunRequest): Promise<RunResult> {
    if (this.#closing !== null)
      return Promise.reject(new FabricError('usage', 'This fabric is closed; create another to start runs.'));
    const problem = requestProblem(request);
    if (problem !== null) return Promise.reject(new FabricError('usage', `fabric.run: ${problem}`));
    const priority = this.#runsStarted++;
    const observers = [...(request.observers ?? []), ...this.#observers];
    const run = this.#runs.run(this.#observers.length === 0 ? request : { ...request, observers }, priority);
    this.#inflight.add(run);
    const forget = () => this.#inflight.delete(run);
    run.then(forget, forget);
    if (this.#spans !== null) this.#traceRun(run, this.#spans);
    return run;
  }

  /** Sees the events of every run this fabric starts from now on (a server's metrics, SPEC §21). */
  observeRuns(observer: RunObserver): void {
    this.#observers.push(observer);
  }

  /** Sends the run's trace once it has ended; a receiver that fails is reported, never fails the run. */
  #traceRun(run: Promise<RunResult>, exporter: SpanExporter): void {
    const traced = traceWhenEnded(run, {
      runLogs: this.runLogStore,
      exporter,
      captureContent: this.config.telemetry.capture_content,
      onDegraded: this.#options.onDegraded,
    });
    this.#inflight.add(traced);
    traced.then(() => this.#inflight.delete(traced));
  }

  /**
   * Goes on with a run its process left (SPEC §18), under the same run id; refusals are thrown
   * (`run_not_resumable`, with the reason and the fix) before anything is written.
   */
  resume(request: ResumeRequest, liveness: ProcessLiveness = new LocalProcessLiveness()): Promise<RunResult> {
    return resumeRun(
      {
        runLogStore: this.runLogStore,
        liveness,
        run: (run) => this.run(run),
        configDigest: this.config.digest,
        profiles: this.config.profiles,
        approvals: this.approvals,
      },
      request,
    );
  }

  /**
   * Waits for the runs in progress to write their `run_end` (cancel them first to stop them),
   * then writes what the mirror holds (bounded) and closes the control store. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled([...this.#inflight]);
      await (await this.#queue?.catch(() => undefined))?.close();
      await (await this.#control)?.close();
    })();
    return this.#closing;
  }
}
