/**
 * The ports the application needs. Adapters in `src/infrastructure/` implement them; the
 * interfaces (CLI, HTTP, MCP) build the adapters and inject them. Nothing here does I/O.
 */
import type { ChatMessage, JsonSchema, ToolCall, ToolSpec, Usage } from '../domain/messages.ts';
import type { EffectClass } from '../domain/effects.ts';
import type { RunEvent, RunEventInput } from '../domain/run-events.ts';
import type { PlacedRule, PolicyDecision, PolicyRequest } from '../domain/policy.ts';
import type { SpecialistConfig, ThinkLevel } from '../config/schema.ts';

// ---------------------------------------------------------------------------------------------
// Models

/** Which kind of server a backend is. Also the `tool` column of `control.agent_run`. */
export type BackendKind = 'lm_studio' | 'ollama' | 'llama_cpp' | 'vllm' | 'openai';

/** Every backend kind, in the order they are shown. */
export const BACKEND_KINDS: readonly BackendKind[] = ['lm_studio', 'ollama', 'llama_cpp', 'vllm', 'openai'];

/** The backend kind a runlog's backend string names (`lm_studio http://...`, `llama_cpp ...`), or null. */
export function backendKindOf(backend: string | undefined): BackendKind | null {
  if (backend === undefined) return null;
  return BACKEND_KINDS.find((kind) => backend.startsWith(`${kind} `) || backend === kind) ?? null;
}

/**
 * A hosted endpoint (an OpenAI-compatible API with a key): used only when a model on it is named,
 * never chosen on its own (SPEC §5, local first).
 */
export function isHosted(kind: BackendKind): boolean {
  return kind === 'openai';
}

export interface ChatRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolSpec[];
  readonly signal: AbortSignal;
  /** How to sample and think, from the model's profile (SPEC §16); absent: the server's defaults. */
  readonly settings?: TurnSettings;
  /**
   * Requests with the same key (a run's id) go to the server that answered the last one while it
   * is healthy, so its prompt cache serves every turn (SPEC §17).
   */
  readonly affinity?: string;
}

/**
 * A request's sampling and thinking, as the run resolved them from the model's profile. `think`
 * is set only for a model known to think: a server refuses it for one that does not (SPEC §16).
 */
export interface TurnSettings {
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly minP?: number;
  readonly maxOutputTokens?: number;
  /** The most context the model is run with (a server that sizes the window per request, Ollama, stays under it). */
  readonly contextLength?: number;
  readonly think?: ThinkLevel;
}

/** What a chat client reports while a request is in flight. */
export type ChatStreamEvent =
  | { readonly type: 'text'; readonly text: string }
  /** Reasoning as it streams, from its own field or from `<think>` in the content (SPEC §16). */
  | { readonly type: 'reasoning'; readonly text: string }
  | { readonly type: 'tool_call_started'; readonly name: string }
  | {
      readonly type: 'retry';
      readonly attempt: number;
      readonly delayMs: number;
      readonly reason: string;
    };

/** One completed model turn, assembled from the stream. */
export interface ChatTurn {
  /** The answer's text, without `<think>` blocks. */
  readonly content: string;
  /** What the model reasoned, from whichever field or tag carried it; '' when it did not. */
  readonly reasoning?: string;
  /** Reasoning tokens, when the server counts them apart. */
  readonly reasoningTokens?: number | undefined;
  readonly toolCalls: readonly ToolCall[];
  readonly finishReason: string | null;
  readonly usage: Usage;
  readonly latencyMs: number;
  /** How many HTTP attempts the turn took (1 when no retry was needed). */
  readonly attempts: number;
  /** Which backend answered, e.g. `lm_studio http://127.0.0.1:1234`. */
  readonly backend: string;
}

/**
 * Sends a conversation with tools to a model and returns the assembled turn. Adapters retry
 * transient faults themselves and throw `FabricError` (`model_lacks_tools`, `backend_unavailable`,
 * `backend_error`, `context_overflow`, `run_cancelled`) when they give up.
 */
export interface ChatClient {
  readonly backend: BackendKind;
  complete(request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn>;
}

/** A model as a backend reports it. Unknown facts are `undefined`, never guessed. */
export interface CatalogModel {
  readonly id: string;
  readonly backend: BackendKind;
  readonly baseUrl: string;
  readonly type: 'llm' | 'vlm' | 'embedding' | 'unknown';
  readonly toolUse: boolean | undefined;
  readonly loaded: boolean | undefined;
  /** Parameter count in billions, parsed from the backend's size string. */
  readonly paramsB: number | undefined;
  readonly contextLength: number | undefined;
  readonly maxContextLength: number | undefined;
  /** Whether the model thinks (Ollama's `thinking` capability, LM Studio's `capabilities.reasoning`); undefined when the server does not say. */
  readonly thinking?: boolean | undefined;
  /** Requests the loaded model serves at once (LM Studio's `config.parallel`, llama-server's `total_slots`); undefined when unknown. */
  readonly parallel?: number | undefined;
  /**
   * The server and its build or version as it reports it, `<server> <version>` (llama-server
   * `/props` `build_info`, vLLM `/version`, Ollama `/api/version`): most quirks are bound to one
   * (research/local-model-quirks-2.md Q33). The one source of a model card's `serverVersion`.
   */
  readonly server?: string | undefined;
  /**
   * What reads the model's tool calls, where the server says (llama-server `/slots` `chat_format`
   * and its chat template's digest, Ollama `/api/show` `parser`/`renderer`; Q33, Q34).
   */
  readonly toolParser?: string | undefined;
  /** The model file as the server identifies it (Ollama's `digest`): a new pull changes it. */
  readonly fileId?: string | undefined;
  /** The quantisation the server reports (Ollama's `details.quantization_level`, LM Studio's `quantization`). */
  readonly quantisation?: string | undefined;
  /** Where `contextLength` comes from, when the backend's kind does not say it alone (Ollama behind `/v1`). */
  readonly windowSource?: string | undefined;
}

/** One backend's answer to "what do you have?". */
export interface BackendProbe {
  readonly backend: BackendKind;
  /** The config's name for a backend of `llm.backends`; absent for LM Studio and Ollama. */
  readonly name?: string | undefined;
  readonly baseUrl: string;
  readonly ok: boolean;
  readonly latencyMs: number;
  readonly error: string | undefined;
  /** The server refused the configured key (401/403): a configuration fault, not an outage. */
  readonly denied?: boolean | undefined;
  /** The server is up but still loading its model (llama-server's 503 "Loading model"). */
  readonly loading?: boolean | undefined;
  readonly models: readonly CatalogModel[];
}

/**
 * Lists what every configured backend has. Asks them concurrently, with a short timeout;
 * `onProgress` hears about a wait worth telling (a llama-server still loading its model).
 */
export interface ModelCatalog {
  probe(signal?: AbortSignal, onProgress?: (message: string) => void): Promise<readonly BackendProbe[]>;
}

// ---------------------------------------------------------------------------------------------
// Packs

/** What a tool gets besides its arguments. */
export interface ToolContext {
  readonly runId: string;
  readonly step: number;
  readonly signal: AbortSignal;
  /**
   * A person approved this call (SPEC §19), or a grant covers it: the policy lets it through, and
   * a command runs in the same sandbox as an allowlisted one, its exact argv allowed for this call.
   */
  readonly approved?: { readonly argv?: readonly string[] | undefined };
}

/** What the policy says about one call before it runs (SPEC §19): the verdict and what it read. */
export interface PolicyCheck {
  readonly decision: PolicyDecision;
  /** The deciding rule in words. */
  readonly by: string;
  readonly request: PolicyRequest;
}

/** A tool the policy governs: its calls are checked before they run (and before `tool_started`). */
export interface PolicyChecked {
  checkPolicy(args: unknown): PolicyCheck;
}

/** True when the policy governs the tool. */
export function isPolicyChecked(tool: Tool): tool is Tool & PolicyChecked {
  return typeof (tool as Partial<PolicyChecked>).checkPolicy === 'function';
}

export type Validation<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly message: string };

/** A tool's answer with what it changed: the text the model sees, and a unified diff of a file it changed. */
export interface ToolOutput {
  readonly text: string;
  /** Recorded in the runlog (`tool_result.diff`), not sent to the model. */
  readonly diff?: string;
}

/** A tool of a pack. `validate` checks parsed JSON arguments; `run` throws `ToolError` to report failure. */
export interface Tool {
  readonly spec: ToolSpec;
  /**
   * What running it does (SPEC §18): one class, or one per call (a command tool whose allowlisted
   * `cargo` commands are idempotent and the rest external). Undeclared: `external`.
   */
  readonly effect?: EffectClass | ((args: unknown) => EffectClass);
  validate(args: unknown): Validation<unknown>;
  run(args: unknown, context: ToolContext): Promise<string | ToolOutput>;
}

/** Whether a `transform` call that started before its process died changed the workspace. */
export type AppliedCheck = 'applied' | 'not_applied' | 'unknown';

/** A `transform` tool that can tell from the workspace whether a call of it took effect (SPEC §18). */
export interface CheckedTransform {
  checkApplied(args: unknown): Promise<AppliedCheck>;
}

/** True when a tool can check a call of it against the workspace. */
export function canCheckApplied(tool: Tool): tool is Tool & CheckedTransform {
  return typeof (tool as Partial<CheckedTransform>).checkApplied === 'function';
}

/** A tool's effect class for one call's (validated) arguments. */
export function effectOf(tool: Tool, args: unknown): EffectClass {
  const effect = tool.effect;
  if (effect === undefined) return 'external';
  return typeof effect === 'function' ? effect(args) : effect;
}

/** The pack's output format: the `finish_task` schema. */
export interface FinishSpec {
  readonly description: string;
  readonly parameters: JsonSchema;
  validate(args: unknown): Validation<Record<string, unknown>>;
}

/** A specialist's pack: system prompt, tools and finish schema, with an async lifecycle. */
export interface SpecialistPack {
  readonly name: string;
  readonly systemPrompt: string;
  readonly finish: FinishSpec;
  /** Acquire resources (subprocesses, connections). Called once, before `tools()`. */
  open(signal: AbortSignal): Promise<void>;
  /** The tools, `finish_task` excluded (the loop adds it). Valid after `open`. */
  tools(): readonly Tool[];
  /** Release everything `open` acquired, even after a partial `open`. Never throws. */
  close(): Promise<void>;
}

/** A gate's verdict; a pass may say what it checked (`cargo check passed (0 errors, 1 warning).`). */
export type GateResult =
  | { readonly ok: true; readonly message?: string }
  | { readonly ok: false; readonly message: string };

/** A pack that checks a finish before accepting it (the Rust pack: the workspace compiles). */
export interface FinishGate {
  checkFinish(payload: Record<string, unknown>, context: ToolContext): Promise<GateResult>;
}

/** True when a pack declares a finish gate. */
export function hasFinishGate(pack: SpecialistPack): pack is SpecialistPack & FinishGate {
  return typeof (pack as Partial<FinishGate>).checkFinish === 'function';
}

/** The fabric-wide settings every pack receives. */
export interface FabricSettings {
  readonly searxngUrl: string | undefined;
  /**
   * The runs directory: the record of every run. When it lies inside a workspace, no tool of the
   * pack may read or change it (SPEC §6).
   */
  readonly runsDir?: string | undefined;
  /** The config file in use: protected like the runs directory (it names tokens and commands). */
  readonly configFile?: string | undefined;
}

/** What a pack builder receives: the specialist's config entry and the fabric-wide settings. */
export interface PackBuildContext {
  readonly specialist: string;
  readonly config: SpecialistConfig;
  /** Absolute workspace path: `--workspace`, else the configured one, else undefined. */
  readonly workspace: string | undefined;
  readonly settings: FabricSettings;
  /**
   * The specialist's `policy.rules` then the top-level ones (SPEC §19). The registry refuses the
   * calls they deny or ask about; a pack that runs commands adds the commands `allow` rules name
   * to its allowlist.
   */
  readonly policy?: readonly PlacedRule[];
}

/** A pack factory: `builtin:<name>`, or the export a custom pack's module names. Knows nothing of MCP. */
export type PackBuilder = (context: PackBuildContext) => SpecialistPack | Promise<SpecialistPack>;

/** A specialist as the registry describes it, before its pack is built. */
export interface SpecialistInfo {
  readonly name: string;
  readonly description: string;
  readonly builder: string;
  readonly model: string | undefined;
  readonly workspace: string | undefined;
}

/** Builds packs from configuration. */
export interface SpecialistRegistry {
  list(): readonly SpecialistInfo[];
  /** Builds the named specialist's pack. `workspace` overrides the configured one. */
  getPack(name: string, options: { workspace?: string }): Promise<SpecialistPack>;
}

// ---------------------------------------------------------------------------------------------
// Runlog and observers

/** An open, append-only runlog. `append` stamps `v`, `ts`, `run_id` and `seq`. */
export interface RunLog {
  readonly runId: string;
  /** Where the log lives (a file path, or `memory:<run_id>`). */
  readonly location: string;
  append(event: RunEventInput): Promise<RunEvent>;
  close(): Promise<void>;
}

/** The runlog as read back. `torn` is set when a killed process left a partial last line. */
export interface RunLogContents {
  readonly runId: string;
  readonly location: string;
  readonly events: readonly RunEvent[];
  readonly torn: boolean;
}

/** Where runlogs are created and read. */
export interface RunLogStore {
  create(runId: string): Promise<RunLog>;
  /** Reads by run id or by location. Throws `FabricError('run_not_found')` or `('runlog_corrupt')`. */
  read(ref: string): Promise<RunLogContents>;
  /** Run ids, newest first. */
  list(): Promise<readonly string[]>;
}

/** A store whose runlogs a resumed run goes on appending to (SPEC §18). */
export interface ResumableRunLogs {
  /**
   * Opens an existing run's runlog to append after its last whole line (a torn last line left by
   * a killed process is dropped first); `seq` goes on from there.
   */
  reopen(runId: string): Promise<RunLog>;
}

/** A store that tells a runlog's last `seq` without reading it whole (sync's check that a run grew). */
export interface RunLogTails {
  /** The `seq` of the run's last whole line; null when it cannot tell (read the runlog instead). */
  lastSeq(runId: string): Promise<number | null>;
}

/** True when a store can tell a runlog's last seq cheaply. */
export function hasTails(store: RunLogStore): store is RunLogStore & RunLogTails {
  return typeof (store as Partial<RunLogTails>).lastSeq === 'function';
}

/** True when a store can reopen a runlog. */
export function canReopen(store: RunLogStore): store is RunLogStore & ResumableRunLogs {
  return typeof (store as Partial<ResumableRunLogs>).reopen === 'function';
}

/** Sees every event as it is written, and the model's text as it streams. Must not throw. */
export interface RunObserver {
  onEvent(event: RunEvent): void;
  onText(text: string): void;
  onToolCallStarted(name: string): void;
}

/** Time, injectable so tests and replays are deterministic. */
export interface Clock {
  now(): Date;
}

export type { ChatMessage, RunEvent };
