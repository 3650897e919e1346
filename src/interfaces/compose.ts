/**
 * The composition root shared by the CLI, the HTTP API and the MCP server: it builds the
 * adapters from the config and injects them into the application.
 */
import { executeTask } from '../application/execute-task.ts';
import type {
  BackendProbe,
  ChatClient,
  ModelCatalog,
  RunObserver,
  SpecialistPack,
} from '../application/ports.ts';
import { RequestLimiter, limitRequests } from '../application/request-limiter.ts';
import { type ModelChoice, type ResolveOptions, resolveModel } from '../application/resolve-model.ts';
import { type Environment, readEnvironment } from '../config/env.ts';
import type { FabricConfig } from '../config/load.ts';
import type { RunResult } from '../domain/run-result.ts';
import { LlmBackends } from '../infrastructure/llm/llm-backends.ts';
import { createMcpWrap } from '../infrastructure/mcp/mcp-wrap.ts';
import { ConfigRegistry } from '../infrastructure/registry/config-registry.ts';
import { BUILTIN_PACKS } from '../infrastructure/registry/builtin-packs.ts';
import { FileRunLogStore } from '../infrastructure/runlog/file-run-log-store.ts';
import { systemClock } from '../infrastructure/runlog/stamp.ts';
import { startRunMirror } from './control-plane.ts';
import { FABRIC_VERSION } from './version.ts';

/** What a run request carries, from any interface. */
export interface RunRequest {
  readonly specialist: string;
  readonly task: string;
  readonly workspace?: string | undefined;
  readonly model?: string | undefined;
  readonly maxSteps?: number | undefined;
  readonly observers?: readonly RunObserver[];
  readonly signal: AbortSignal;
  /** The run id to use, for callers that must know it before the run starts (the HTTP API). */
  readonly runId?: string | undefined;
  /** Told which model was chosen and why, before the run starts. */
  readonly onModelChosen?: (choice: ModelChoice) => void;
  /** Told about trouble that does not stop the run (the control database is off). */
  readonly onNotice?: (message: string) => void;
}

/** What a Fabric takes besides its config. */
export interface FabricOptions {
  /** The environment stdio MCP servers start from (only PATH and HOME); default: the process's. */
  readonly env?: Environment;
}

/** The fabric's services for one config. */
export class Fabric {
  readonly config: FabricConfig;
  readonly registry: ConfigRegistry;
  readonly runLogStore: FileRunLogStore;
  readonly catalog: ModelCatalog;
  /** Caps model requests in flight across every run of this Fabric (`llm.max_concurrent_requests`). */
  readonly limiter: RequestLimiter;
  readonly #llm: LlmBackends;

  constructor(config: FabricConfig, options: FabricOptions = {}) {
    this.config = config;
    this.registry = new ConfigRegistry({
      specialists: config.specialists,
      baseDir: config.baseDir,
      builtins: BUILTIN_PACKS,
      settings: { searxngUrl: config.search.searxng_url },
      // Attaches a specialist's mcp_servers (a no-op when it has none); pack builders know nothing of it.
      wrap: createMcpWrap({
        hostEnv: options.env ?? readEnvironment(),
        baseDir: config.baseDir,
        clientVersion: FABRIC_VERSION,
      }),
    });
    this.runLogStore = new FileRunLogStore(config.runs_dir, systemClock);
    // LM Studio (servers pooled) and Ollama, probed concurrently, cached, with health-aware routing.
    this.#llm = new LlmBackends(config.llm);
    this.catalog = this.#llm.catalog;
    this.limiter = new RequestLimiter(config.llm.max_concurrent_requests);
  }

  /** Resolves the model for a specialist: `--model`, else its configured model (aliases expanded), else the best available. */
  async chooseModel(
    specialist: string,
    flagModel: string | undefined,
    signal?: AbortSignal,
  ): Promise<ModelChoice> {
    const probes: readonly BackendProbe[] = await this.catalog.probe(signal);
    return resolveModel(probes, this.#resolveOptions(specialist, flagModel));
  }

  #resolveOptions(specialist: string, flagModel: string | undefined): ResolveOptions {
    const configured = this.registry.config(specialist).model;
    return {
      flagModel: flagModel === undefined ? undefined : this.#expandAlias(flagModel),
      configuredModel: configured === undefined ? undefined : this.#expandAlias(configured),
    };
  }

  #expandAlias(name: string): string {
    return this.config.llm.models[name] ?? name;
  }

  /** Runs a task end to end: pack, model, loop. Errors before the run starts are thrown. */
  async run(request: RunRequest): Promise<RunResult> {
    const specialistConfig = this.registry.config(request.specialist);
    const choice = await this.chooseModel(request.specialist, request.model, request.signal);
    request.onModelChosen?.(choice);
    const pack = await this.registry.getPack(
      request.specialist,
      request.workspace === undefined ? {} : { workspace: request.workspace },
    );
    // Starts on the chosen backend; fails over to another backend with a suitable model.
    const resolveOptions = this.#resolveOptions(request.specialist, request.model);
    const chat = limitRequests(
      await this.#llm.chatClientFor(choice, resolveOptions, request.signal),
      this.limiter,
    );
    const workspace = request.workspace ?? specialistConfig.workspace;
    // Mirrored to the control plane off the loop's path; a database that is off never fails the run.
    const mirror = startRunMirror(this.config, request.onNotice ?? (() => {}));
    try {
      return await this.#execute(request, choice, pack, chat, workspace, mirror.observer);
    } finally {
      await mirror.finish();
    }
  }

  #execute(
    request: RunRequest,
    choice: ModelChoice,
    pack: SpecialistPack,
    chat: ChatClient,
    workspace: string | undefined,
    mirror: RunObserver,
  ): Promise<RunResult> {
    const specialistConfig = this.registry.config(request.specialist);
    return executeTask({
      specialist: request.specialist,
      task: request.task,
      pack,
      chat,
      model: {
        id: choice.model.id,
        backend: `${choice.model.backend} ${choice.model.baseUrl}`,
        reason: choice.reason,
      },
      runLogStore: this.runLogStore,
      observers: [...(request.observers ?? []), mirror],
      limits: {
        maxSteps: request.maxSteps ?? specialistConfig.max_steps ?? this.config.loop.max_steps,
        budgetMs: (specialistConfig.budget_s ?? this.config.loop.budget_s) * 1000,
        recoverTextToolCalls: this.config.loop.recover_text_tool_calls,
      },
      workspace: workspace ?? null,
      configDigest: this.config.digest,
      fabricVersion: FABRIC_VERSION,
      clock: systemClock,
      signal: request.signal,
      ...(request.runId === undefined ? {} : { runId: request.runId }),
    });
  }
}
