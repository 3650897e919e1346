/**
 * The run use case (SPEC §2, §3): validate the specialist and the workspace, expand the model
 * alias once, choose the model, build the pack, limit the model's requests, lock the workspace,
 * attach the control plane's mirror, then run the loop (`executeTask`). Every interface and
 * orchestrator starts runs through it; it reaches the world only through the ports below.
 */
import type { OnApproval } from '../../domain/approvals.ts';
import type { ApprovalStore } from '../approvals/approval-store.ts';
import type { InboxReader } from './steering.ts';
import { runProfileFor } from '../models/run-profile.ts';
import { type LoadResult, type RunWindow, runWindowFor } from '../models/run-window.ts';
import type { ModelProfile, SpecialistConfig } from '../../config/schema.ts';
import type { RunResult } from '../../domain/run-result.ts';
import type { ModelCard } from '../models/model-card.ts';
import { type ModelChoice, type ResolveOptions, resolveModel } from '../models/resolve-model.ts';
import type { BackendProbe, ChatClient, Clock, RunLogStore, RunObserver, SpecialistPack } from '../ports.ts';
import type { RunOwner } from '../runs/liveness-ports.ts';
import { type RunProfile, executeTask } from './execute-task.ts';
import type { KeptOutputs } from './output-budget.ts';
import { type RequestLimiter, limitRequests } from './request-limiter.ts';
import type { RunRequest } from './run-request.ts';
import type { WorkspaceFingerprint } from './workspace-fingerprint.ts';
import { FabricError } from '../../domain/errors.ts';
import { newRunId } from './run-id.ts';

/** The configured specialists, as a run needs them. */
export interface RunSpecialists {
  /** The specialist's config entry; throws `specialist_unknown` naming the configured ones. */
  config(name: string): SpecialistConfig;
  /**
   * Throws unless the workspace is an existing directory: `usage` for one the request gave
   * (`requested`), `config_invalid` for the configured one, naming the path either way.
   */
  checkWorkspace(name: string, workspace: string, requested: boolean): Promise<void>;
  /** Builds the specialist's pack for this workspace (the configured one when undefined). */
  buildPack(name: string, workspace: string | undefined): Promise<SpecialistPack>;
}

/** The model backends: what they have, and a chat client that fails over between them. */
export interface RunModels {
  probe(signal?: AbortSignal, onProgress?: (message: string) => void): Promise<readonly BackendProbe[]>;
  chatClientFor(choice: ModelChoice, resolve: ResolveOptions, signal?: AbortSignal): Promise<ChatClient>;
  /** Loads the model at a context window where the backend can; the window it got (SPEC §17). */
  loadAt?(choice: ModelChoice, contextLength: number, signal?: AbortSignal): Promise<LoadResult | undefined>;
  /** The model cards kept (SPEC §20); resolution without them is SPEC §5's. */
  cards?(): Promise<readonly ModelCard[]>;
}

/** Who holds a workspace, as a waiting run is told. */
export interface WorkspaceHolderInfo {
  readonly run_id: string;
  readonly pid: number;
  readonly host: string;
}

/** One run at a time writes a workspace (SPEC §10). */
export interface WorkspaceLocks {
  /** Takes the workspace for the run, waiting for (or refusing with `workspace_busy`) its holder. */
  lock(
    workspace: string,
    runId: string,
    options: {
      readonly wait: boolean;
      readonly signal: AbortSignal;
      readonly onWait: (holder: WorkspaceHolderInfo) => void;
    },
  ): Promise<{ release(): Promise<void> }>;
}

/** The control plane's mirror of runs (SPEC §7): off the loop's path, never failing a run. */
export interface RunMirror {
  /** A run's observer; `onNotice` hears once if the run's rows do not reach the store. */
  observe(runId: string, onNotice: (message: string) => void): RunObserver;
  /** Marks the run ended, also one whose `run_end` never reached the observer. */
  release(runId: string): void;
}

/** The loop's limits and the run record's constants, from the config. */
export interface RunSettings {
  /** `llm.models`: alias → model id. */
  readonly aliases: Readonly<Record<string, string>>;
  readonly maxSteps: number;
  readonly budgetS: number;
  readonly recoverTextToolCalls: boolean;
  /** `loop.stuck_repeats` (SPEC §17); default 4. */
  readonly stuckRepeats?: number;
  readonly configDigest: string;
  readonly fabricVersion: string;
  /** `profiles:` from the config, over the shipped ones (SPEC §16). */
  readonly profiles?: Readonly<Record<string, ModelProfile>>;
  /** `llm.context_length`: the window runs want when the profile names none (SPEC §17). */
  readonly contextLength?: number;
  /** Top-level `policy.on_approval` and `policy.approval_timeout_s` (SPEC §19). */
  readonly onApproval?: OnApproval | undefined;
  readonly approvalTimeoutS?: number | undefined;
}

/** What the run use case reaches the world through. */
export interface StartRunDeps {
  readonly specialists: RunSpecialists;
  readonly models: RunModels;
  readonly locks: WorkspaceLocks;
  /** The process's mirror, opened on first use; null when the control plane is off. */
  readonly mirror: () => Promise<RunMirror | null>;
  readonly runLogStore: RunLogStore;
  /** Where whole outputs of results cut to fit the window are kept (SPEC §17). */
  readonly outputs?: KeptOutputs;
  readonly limiter: RequestLimiter;
  readonly clock: Clock;
  /** This process, recorded in `run_start`: a run whose process is gone shows as interrupted (SPEC §6). */
  readonly owner: RunOwner;
  readonly settings: RunSettings;
  /** The fingerprint of a run's workspace after each step (SPEC §18); none: no `step_end`. */
  readonly fingerprints?: (workspace: string, runId: string) => WorkspaceFingerprint;
  /** A run's inbox (SPEC §19, ADR 0019); a resumed run reads what arrives from now on. */
  readonly inboxes?: (runId: string, resumed: boolean) => InboxReader;
  /** Where approvals and grants are kept (SPEC §19); none: a call that needs one is refused. */
  readonly approvals?: ApprovalStore;
}

/** Starts runs: one instance per process, shared by every interface. */
export class RunStarter {
  readonly #deps: StartRunDeps;

  constructor(deps: StartRunDeps) {
    this.#deps = deps;
  }

  /** A model id or an alias from `llm.models`, as the id it stands for. */
  expandAlias(name: string): string {
    return this.#deps.settings.aliases[name] ?? name;
  }

  /** A new run id (time-ordered, unique), minted here only. */
  newRunId(): string {
    return newRunId(this.#deps.clock);
  }

  /**
   * Resolution options: `--model`, else the specialist's configured model, aliases expanded.
   * Without a specialist, only the flag counts.
   */
  resolveOptions(
    specialist: string | undefined,
    flagModel: string | undefined,
    flagFrom?: string | undefined,
  ): ResolveOptions {
    const configured = specialist === undefined ? undefined : this.#deps.specialists.config(specialist).model;
    return {
      flagModel: flagModel === undefined ? undefined : this.expandAlias(flagModel),
      flagFrom,
      configuredModel: configured === undefined ? undefined : this.expandAlias(configured),
      ...(specialist === undefined ? {} : { measured: { cards: [], specialist } }),
    };
  }

  /** Resolves the model for a specialist: `--model`, else its configured model, else the best available. */
  async chooseModel(
    specialist: string,
    flagModel: string | undefined,
    signal?: AbortSignal,
  ): Promise<ModelChoice> {
    return this.#choose(this.resolveOptions(specialist, flagModel), signal);
  }

  /** The model these backends' answers give a specialist (or just `--model`), by the same rules as a run. */
  chooseFrom(
    probes: readonly BackendProbe[],
    specialist: string | undefined,
    flagModel: string | undefined,
    cards: readonly ModelCard[] = [],
  ): ModelChoice {
    return resolveModel(probes, {
      ...this.resolveOptions(specialist, flagModel),
      measured: { cards, specialist },
    });
  }

  /**
   * Checks what a request names before anything else is asked: the specialist exists, and the
   * workspace (the request's, else the configured one) is an existing directory. Returns the
   * workspace the run works in.
   */
  async validate(request: Pick<RunRequest, 'specialist' | 'workspace'>): Promise<string | undefined> {
    const config = this.#deps.specialists.config(request.specialist);
    const workspace = request.workspace ?? config.workspace;
    if (workspace !== undefined)
      await this.#deps.specialists.checkWorkspace(
        request.specialist,
        workspace,
        request.workspace !== undefined,
      );
    return workspace;
  }

  /** Runs a task end to end. `priority`: runs started earlier are served first by the limiter. */
  async run(request: RunRequest, priority: number): Promise<RunResult> {
    const deps = this.#deps;
    const workspace = await this.validate(request);
    const resolve = {
      ...this.resolveOptions(request.specialist, request.model, request.modelFrom),
      ...(request.resume?.previous === undefined ? {} : { previous: request.resume.previous }),
    };
    // A run waits for a server still loading its model; the notice says so when someone listens.
    const choice = await this.#choose(resolve, request.signal, request.onNotice ?? (() => {}));
    request.onModelChosen?.(choice);
    const pack = await deps.specialists.buildPack(request.specialist, request.workspace);
    if (request.resume !== undefined) await samePack(pack, request);
    const profile = runProfileFor(choice.model, deps.settings.profiles);
    const target = profile.settings.context_length ?? deps.settings.contextLength;
    // Starts on the chosen backend; fails over to another backend with a suitable model.
    const chat = limitRequests(
      await deps.models.chatClientFor(choice, resolve, request.signal),
      deps.limiter,
      priority,
    );
    const runId = request.runId ?? this.newRunId();
    // One run at a time writes a workspace (SPEC §10); the lease is the run's own, released however it ends.
    const lease =
      workspace === undefined
        ? undefined
        : await deps.locks.lock(workspace, runId, {
            wait: request.waitForWorkspace ?? true,
            signal: request.signal,
            onWait: (holder) =>
              request.onNotice?.(
                `waiting for the workspace ${workspace}: run ${holder.run_id} (process ${holder.pid} on ${holder.host}) holds it.`,
              ),
          });
    // Mirrored to the control plane off the loop's path; the run never waits for the database,
    // and a database that fails never fails the run (SPEC §7).
    let mirror: RunMirror | null;
    let window: RunWindow;
    try {
      // Loaded at its window once the run holds its workspace: a run refused as busy loads nothing.
      const loadAt = deps.models.loadAt;
      window = await runWindowFor(
        choice.model,
        target,
        loadAt === undefined
          ? undefined
          : (context) => loadAt.call(deps.models, choice, context, request.signal),
      );
      mirror = await deps.mirror();
    } catch (error) {
      await lease?.release();
      throw error;
    }
    const observer = mirror?.observe(runId, request.onNotice ?? (() => {}));
    try {
      return await this.#execute({ ...request, runId }, choice, pack, chat, workspace, observer, {
        profile:
          target === undefined ? profile : { ...profile, turn: { ...profile.turn, contextLength: target } },
        window,
      });
    } finally {
      mirror?.release(runId);
      await lease?.release();
    }
  }

  async #choose(
    resolve: ResolveOptions,
    signal: AbortSignal | undefined,
    onProgress?: (message: string) => void,
  ): Promise<ModelChoice> {
    const probes = await this.#deps.models.probe(signal, onProgress);
    const cards = (await this.#deps.models.cards?.()) ?? [];
    return resolveModel(probes, {
      ...resolve,
      measured: { cards, specialist: resolve.measured?.specialist },
    });
  }

  #execute(
    request: RunRequest & { readonly runId: string },
    choice: ModelChoice,
    pack: SpecialistPack,
    chat: ChatClient,
    workspace: string | undefined,
    mirror: RunObserver | undefined,
    fit: { readonly profile: RunProfile; readonly window: RunWindow },
  ): Promise<RunResult> {
    const { settings } = this.#deps;
    const specialistConfig = this.#deps.specialists.config(request.specialist);
    const { profile, window } = fit;
    return executeTask({
      specialist: request.specialist,
      task: request.task,
      pack,
      chat,
      model: {
        id: choice.model.id,
        backend: `${choice.model.backend} ${choice.model.baseUrl}`,
        reason: choice.reason,
        ...(choice.model.server === undefined ? {} : { server: choice.model.server }),
        ...(choice.model.toolParser === undefined ? {} : { toolParser: choice.model.toolParser }),
      },
      runLogStore: this.#deps.runLogStore,
      observers: [...(request.observers ?? []), ...(mirror === undefined ? [] : [mirror])],
      limits: {
        maxSteps: request.maxSteps ?? specialistConfig.max_steps ?? settings.maxSteps,
        budgetMs: (specialistConfig.budget_s ?? settings.budgetS) * 1000,
        recoverTextToolCalls: settings.recoverTextToolCalls,
        ...(settings.stuckRepeats === undefined ? {} : { stuckRepeats: settings.stuckRepeats }),
      },
      workspace: workspace ?? null,
      configDigest: settings.configDigest,
      fabricVersion: settings.fabricVersion,
      clock: this.#deps.clock,
      owner: this.#deps.owner,
      ...(request.tags === undefined ? {} : { tags: request.tags }),
      ...(request.resumer === undefined ? {} : { resumer: request.resumer }),
      signal: request.signal,
      runId: request.runId,
      profile,
      ...(window.tokens === undefined ? {} : { windowTokens: window.tokens }),
      ...(window.note === undefined ? {} : { windowNote: window.note }),
      ...(window.source === undefined ? {} : { windowSource: window.source }),
      ...(this.#deps.outputs === undefined ? {} : { outputs: this.#deps.outputs }),
      ...(workspace === undefined || this.#deps.fingerprints === undefined
        ? {}
        : { fingerprint: this.#deps.fingerprints(workspace, request.runId) }),
      ...(request.resume === undefined ? {} : { resume: request.resume }),
      ...(this.#deps.inboxes === undefined
        ? {}
        : { inbox: this.#deps.inboxes(request.runId, request.resume !== undefined) }),
      ...(request.fence === undefined ? {} : { fence: request.fence }),
      ...(this.#deps.approvals === undefined
        ? {}
        : {
            approvals: {
              store: this.#deps.approvals,
              mode: approvalMode(
                request.onApproval ??
                  specialistConfig.policy?.on_approval ??
                  settings.onApproval ??
                  request.defaultOnApproval ??
                  // HTTP, MCP, the daemon, workers and embedders: the run parks, nothing waits (SPEC §19).
                  'park',
                request.noWaiting === true,
              ),
              timeoutS: specialistConfig.policy?.approval_timeout_s ?? settings.approvalTimeoutS,
              specialist: request.specialist,
              prompt: request.approvalPrompt,
              now: () => this.#deps.clock.now(),
            },
          }),
    });
  }
}

/**
 * A resumed run's pack must send what the run sent (SPEC §18): a system prompt that changed means
 * the pack did, and the conversation would not be the one the model saw. `--force` goes on anyway.
 */
async function samePack(pack: SpecialistPack, request: RunRequest): Promise<void> {
  const resume = request.resume;
  if (resume === undefined || resume.forced) return;
  const sent = resume.history.messages[0];
  if (sent === undefined || sent.content === pack.systemPrompt) return;
  await pack.close();
  throw new FabricError(
    'run_not_resumable',
    `Run ${request.runId} cannot be resumed: the pack of specialist "${request.specialist}" changed since it started (its system prompt is not the one the run sent). Resume it with --force to go on with the new pack, or start a new run.`,
    { details: { reason: 'pack_changed' } },
  );
}

/** A channel where nothing may wait turns a `wait` into a `park` (an MCP call never hangs). */
function approvalMode(mode: OnApproval, noWaiting: boolean): OnApproval {
  return mode === 'wait' && noWaiting ? 'park' : mode;
}
