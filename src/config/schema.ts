import * as v from 'valibot';
import { parseCommandLine } from '../domain/command-line.ts';
import { COMMAND_TOOL, globMatches } from '../domain/policy.ts';
import type { Secret } from './secret.ts';

const positiveInt = v.pipe(v.number(), v.integer(), v.minValue(1));
const nonEmpty = v.pipe(v.string(), v.minLength(1));

/** An MCP server attached to a pack: a stdio command, or a streamable HTTP endpoint. */
export const McpServerSchema = v.union([
  v.strictObject({
    command: nonEmpty,
    args: v.optional(v.array(v.string()), []),
    env: v.optional(v.record(v.string(), v.string()), {}),
    cwd: v.optional(v.string()),
  }),
  v.strictObject({
    url: v.pipe(v.string(), v.url()),
    headers: v.optional(v.record(v.string(), v.string()), {}),
  }),
]);

export const SandboxSchema = v.strictObject({
  allowed_commands: v.optional(v.array(nonEmpty), []),
  timeout_s: v.optional(positiveInt, 300),
  network: v.optional(v.boolean(), false),
  output_limit_bytes: v.optional(positiveInt, 64 * 1024),
  /** When bubblewrap is missing: `refuse` every command, or run with the argv policy only. */
  when_no_os_sandbox: v.optional(v.picklist(['refuse', 'argv_policy_only']), 'argv_policy_only'),
  /** Run the specialist's stdio MCP servers inside the same OS sandbox as `shell`. */
  mcp: v.optional(v.boolean(), false),
  /** Extra directories a sandboxed MCP server may read (e.g. where it is installed). */
  read_only_paths: v.optional(v.array(nonEmpty), []),
});

/** One rule of `policy.rules` (SPEC §19, src/domain/policy.ts). */
export const PolicyRuleSchema = v.pipe(
  v.strictObject({
    tool: nonEmpty,
    command: v.optional(nonEmpty),
    path: v.optional(nonEmpty),
    decision: v.picklist(['allow', 'ask', 'deny']),
  }),
  v.check(
    (rule) => rule.command === undefined || rule.path === undefined,
    'a rule matches a command or a path, not both: split it into two rules',
  ),
  v.check(
    (rule) => rule.command === undefined || globMatches(rule.tool, COMMAND_TOOL, false),
    `a command prefix applies to the ${COMMAND_TOOL} tool only: set tool: ${COMMAND_TOOL}, or match a path instead`,
  ),
  v.check(
    (rule) => rule.path === undefined || rule.tool !== COMMAND_TOOL,
    `a path never applies to the ${COMMAND_TOOL} tool (its calls carry a command, not a path): ` +
      'match its command instead, e.g. command: "cargo tree"',
  ),
  // Matched on the argv the shell tool parses: a command it would refuse could never match.
  v.forward(
    v.check(
      (rule) => rule.command === undefined || parseCommandLine(rule.command).ok,
      (issue) => {
        const parsed = parseCommandLine((issue.input as { command: string }).command);
        return `the ${COMMAND_TOOL} tool refuses this command, so the rule would never match: ${parsed.ok ? '' : parsed.message}`;
      },
    ),
    ['command'],
  ),
  v.check(
    (rule) =>
      rule.decision !== 'allow' || rule.command !== undefined || !globMatches(rule.tool, COMMAND_TOOL, false),
    `an allow rule for ${COMMAND_TOOL} names the command it allows (e.g. command: "cargo tree"); ` +
      'allowing every command is not possible',
  ),
);

export const PolicySchema = v.strictObject({
  /** Of the rules matching a call, deny wins over ask, ask over allow. */
  rules: v.optional(v.array(PolicyRuleSchema), []),
  /**
   * What a call that needs approval does (SPEC §19): `wait` for an answer, `park` the run until
   * one, `deny` it, or `fail` the run. Unset: the channel decides (a terminal waits, no terminal
   * denies, HTTP, MCP, the daemon and workers park).
   */
  on_approval: v.optional(v.picklist(['wait', 'park', 'deny', 'fail'])),
  /** Seconds an unanswered approval waits before it expires (never a "no"); unset: for ever. */
  approval_timeout_s: v.optional(positiveInt),
});

export const SpecialistSchema = v.strictObject({
  builder: nonEmpty,
  description: v.optional(v.string(), ''),
  model: v.optional(nonEmpty),
  workspace: v.optional(nonEmpty),
  max_steps: v.optional(positiveInt),
  budget_s: v.optional(positiveInt),
  sandbox: v.optional(SandboxSchema),
  network_allowed: v.optional(v.boolean(), false),
  /** Hosts `fetch_url` may reach even when they resolve to private addresses. */
  allowed_hosts: v.optional(v.array(nonEmpty), []),
  mcp_servers: v.optional(v.record(v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]+$/)), McpServerSchema), {}),
  /** This specialist's rules, in front of the top-level `policy.rules`. */
  policy: v.optional(PolicySchema),
  /** Pack-specific settings, passed to the builder as they are. */
  options: v.optional(v.record(v.string(), v.unknown()), {}),
});

export const RetrySchema = v.strictObject({
  max_attempts: v.optional(positiveInt, 4),
  base_delay_ms: v.optional(v.pipe(v.number(), v.minValue(0)), 500),
  max_delay_ms: v.optional(v.pipe(v.number(), v.minValue(0)), 8000),
});

/**
 * One backend of `llm.backends` (SPEC §5): llama.cpp's `llama-server`, vLLM, or an
 * OpenAI-compatible endpoint with a key (OpenAI, OpenRouter, Hugging Face, a LiteLLM proxy).
 */
export const BackendSchema = v.strictObject({
  /** lm_studio and ollama entries join `lm_studio_urls` and set `ollama_url` (src/config/backends.ts). */
  kind: v.picklist(['lm_studio', 'ollama', 'llama_cpp', 'vllm', 'openai']),
  /** The server's root, with or without the trailing `/v1`. */
  url: nonEmpty,
  /** How the backend is shown and named in errors; default `<kind>` (unique names required). */
  name: v.optional(v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_.-]+$/))),
  /** The environment variable holding the API key (never the key itself). */
  api_key_env: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/))),
  /** Only these model ids are listed (a hosted endpoint lists hundreds). */
  models: v.optional(v.array(nonEmpty)),
  /** The adapter's own limiter: requests it sends a minute at most. */
  rate_limit: v.optional(v.strictObject({ requests_per_minute: positiveInt })),
  /** How long a llama-server still loading its model is waited for at discovery. */
  load_wait_s: v.optional(positiveInt, 120),
  /**
   * The requests the server serves at once, where it does not say: Ollama's `OLLAMA_NUM_PARALLEL`
   * (llama-server says its `total_slots`, which this overrides). With it, the fabric schedules the
   * server's slots (ADR 0015) instead of sending every request at once.
   */
  parallel: v.optional(positiveInt),
});

export const LlmSchema = v.strictObject({
  lm_studio_urls: v.optional(v.array(nonEmpty), ['http://localhost:1234']),
  ollama_url: v.optional(nonEmpty, 'http://localhost:11434'),
  /** The requests Ollama serves at once (its `OLLAMA_NUM_PARALLEL`, which it does not report); unset: no slot scheduling. */
  ollama_parallel: v.optional(positiveInt),
  /** Aliases: a specialist's `model: coder` means `models.coder`. */
  models: v.optional(v.record(v.string(), nonEmpty), {}),
  request_timeout_s: v.optional(positiveInt, 600),
  probe_timeout_ms: v.optional(positiveInt, 1500),
  /** Model requests in flight at once across all runs of a process (HTTP and MCP run several). */
  max_concurrent_requests: v.optional(positiveInt, 4),
  retry: v.optional(RetrySchema, {}),
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(2))),
  /** The context window runs want (a profile's context_length overrides it): LM Studio loads a model at it (SPEC §17). */
  context_length: v.optional(positiveInt),
  /** More backends beside LM Studio and Ollama: llama-server, vLLM, keyed OpenAI-compatible endpoints. */
  backends: v.optional(v.array(BackendSchema), []),
});

/** How hard a thinking model thinks (SPEC §16); `off` turns thinking off where the server can. */
export const ThinkLevelSchema = v.picklist(['off', 'low', 'medium', 'high']);

/**
 * A model profile (SPEC §16): the settings a family of models runs best with, keyed in
 * `profiles:` by a model-id glob (`qwen3*`, `*gpt-oss*`). Every key is optional: a config
 * profile overrides the shipped one key by key.
 */
export const ModelProfileSchema = v.strictObject({
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(2))),
  top_p: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  top_k: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  min_p: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  think: v.optional(ThinkLevelSchema),
  /** Reasoning tokens a turn may spend with no content or call before it is cut and asked again. */
  reasoning_budget: v.optional(positiveInt),
  /** Send the model's reasoning back with its turns (DeepSeek/GLM-style tool loops want it). */
  pass_reasoning_back: v.optional(v.boolean()),
  /** The context the model is run with, in tokens (Ollama num_ctx's ceiling). */
  context_length: v.optional(positiveInt),
  /** The most tokens one turn may write (max_tokens, Ollama num_predict). */
  max_output_tokens: v.optional(positiveInt),
  /**
   * Tool-call ids as sent back: `server` keeps the server's (fresh nine-alphanumeric ones only where
   * it gave none or a repeat); `nine_alnum` rewrites every id to nine letters and digits, which a
   * Mistral-family template requires (research/local-model-quirks-2.md Q10).
   */
  tool_call_ids: v.optional(v.picklist(['server', 'nine_alnum'])),
});

export const LoopSchema = v.strictObject({
  max_steps: v.optional(positiveInt, 30),
  budget_s: v.optional(positiveInt, 1800),
  recover_text_tool_calls: v.optional(v.boolean(), true),
  /** The same call, arguments and result this many times in a row make a run stuck (SPEC §17). */
  stuck_repeats: v.optional(v.pipe(v.number(), v.integer(), v.minValue(2)), 4),
});

export const ControlSchema = v.strictObject({
  enabled: v.optional(v.boolean(), true),
  dsn: v.optional(nonEmpty),
  /**
   * The most connections each Postgres pool of a process opens: the control store's, and with
   * the queue the worker registry's (at most 2) and pg-boss's. docs/queue.md counts them.
   */
  pool_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 3),
});

/** The OpenSpec completion daemon (SPEC §11). */
export const DaemonSchema = v.strictObject({
  /** The specialist whose runs implement the tasks. */
  specialist: v.optional(nonEmpty, 'rust'),
  /** The model it asks for (LM_STUDIO_MODEL, then --model, override it); default: the specialist's. */
  model: v.optional(nonEmpty),
  /**
   * Escalation (SPEC §11.1): models from cheapest to strongest, each given max_attempts on a task
   * before the next is tried. Takes the place of `model` (and LM_STUDIO_MODEL); --model overrides it.
   * `auto` (alone, or as an entry of the list): the local models measured able, best first, by the
   * model cards (SPEC §20); other entries are named models, a hosted one tried after the local ones.
   */
  models: v.optional(
    v.pipe(
      v.unknown(),
      v.check(
        (value) => value === 'auto' || Array.isArray(value),
        'expected `auto` (the measured local models, best first) or a list of models from cheapest to strongest',
      ),
      v.transform((value) => (value === 'auto' ? ['auto'] : value)),
      v.array(nonEmpty),
      v.minLength(1, 'list at least one model'),
      v.check(
        (list) => list.filter((entry) => entry === 'auto').length <= 1,
        'name auto at most once (it stands for every measured local model)',
      ),
    ),
  ),
  /** Times a failing validation runs again before an attempt is spent (flaky tests). */
  validation_reruns: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 1),
  /** Run in the sandbox after each run, in order; every one must pass for the task to be committed. */
  validate: v.optional(v.array(nonEmpty), ['cargo build', 'cargo test']),
  max_attempts: v.optional(positiveInt, 3),
  /** Seconds between scans (OPEN_SPEC_DAEMON_INTERVAL overrides); also the cap of the backend backoff. */
  interval_s: v.optional(positiveInt, 300),
  /** With --once: seconds to wait for a model before giving up (exit 4); a long-running daemon waits for ever. */
  backend_wait_s: v.optional(v.pipe(v.number(), v.minValue(0)), 300),
});

/**
 * `fabric worker`: how often it writes its heartbeat and looks for cancelled runs,
 * and how long a silent worker is taken to be alive before its runs are marked interrupted.
 */
export const WorkerSchema = v.strictObject({
  heartbeat_s: v.optional(v.pipe(v.number(), v.minValue(0.1)), 5),
  dead_after_s: v.optional(v.pipe(v.number(), v.minValue(0.5)), 30),
  /** Runs one worker runs at once (`--concurrency` overrides). */
  concurrency: v.optional(positiveInt, 1),
  /**
   * The most file content (MiB, before compression) a battery's workspace may hold to be archived
   * into the queue for the workers; past it the battery is refused (`workspace_too_large`).
   */
  archive_max_mib: v.optional(v.pipe(v.number(), v.minValue(0.001)), 64),
  /** A loopback listener serving the worker's Prometheus `/metrics` on this port; 0 (the default): none. */
  metrics_port: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65_535)), 0),
  /**
   * How many times a run whose worker died (its lease expired) is handed to another worker, which
   * resumes it from its runlog (SPEC §18); past it the run stays `interrupted`. 0: never.
   */
  max_resumes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 2),
});

/**
 * OpenTelemetry traces (SPEC §21): on when an OTLP endpoint is named here or by the standard
 * `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (which win).
 */
export const TelemetrySchema = v.strictObject({
  /** The OTLP/HTTP base URL; traces go to `<endpoint>/v1/traces`. */
  endpoint: v.optional(v.pipe(v.string(), v.url())),
  /** The full traces URL, used as it is (wins over `endpoint`). */
  traces_endpoint: v.optional(v.pipe(v.string(), v.url())),
  /** Put messages, tool arguments and results on the spans: off unless asked for. */
  capture_content: v.optional(v.boolean(), false),
  service_name: v.optional(nonEmpty, 'agent-fabric'),
});

export const FabricConfigSchema = v.strictObject({
  version: v.optional(v.literal(1), 1),
  runs_dir: v.optional(nonEmpty, './runs'),
  llm: v.optional(LlmSchema, {}),
  loop: v.optional(LoopSchema, {}),
  control: v.optional(ControlSchema, {}),
  search: v.optional(v.strictObject({ searxng_url: v.optional(nonEmpty) }), {}),
  api: v.optional(v.strictObject({ token: v.optional(nonEmpty) }), {}),
  daemon: v.optional(DaemonSchema, {}),
  /**
   * Where runs started over HTTP execute: `in_process` (the default) in the server itself, or
   * `postgres`, queued in the control plane's Postgres (control.dsn) for `fabric worker`s.
   */
  queue: v.optional(v.picklist(['in_process', 'postgres']), 'in_process'),
  worker: v.optional(WorkerSchema, {}),
  /** Model profiles by model-id glob, over the shipped ones (src/config/model-profiles.ts). */
  profiles: v.optional(v.record(nonEmpty, ModelProfileSchema), {}),
  telemetry: v.optional(TelemetrySchema, {}),
  /** How `serve`, `worker` and `daemon` log on stderr: `text`, or `json` lines (`--log-format` overrides). */
  log_format: v.optional(v.picklist(['text', 'json']), 'text'),
  /** Which tool calls run, need a person's approval or are refused (SPEC §19). */
  policy: v.optional(PolicySchema, {}),
  specialists: v.record(v.pipe(v.string(), v.regex(/^[a-zA-Z0-9_-]+$/)), SpecialistSchema),
});

export type FabricConfigInput = v.InferInput<typeof FabricConfigSchema>;
export type ParsedConfig = v.InferOutput<typeof FabricConfigSchema>;
export type SpecialistConfig = v.InferOutput<typeof SpecialistSchema>;
export type SandboxConfig = v.InferOutput<typeof SandboxSchema>;
export type McpServerConfig = v.InferOutput<typeof McpServerSchema>;
/** A backend of `llm.backends`, with its key read from the environment (src/config/load.ts). */
export type BackendConfig = Omit<v.InferOutput<typeof BackendSchema>, 'kind'> & {
  readonly kind: 'llama_cpp' | 'vllm' | 'openai';
  readonly api_key?: Secret | undefined;
};
export type LlmConfig = Omit<v.InferOutput<typeof LlmSchema>, 'backends'> & {
  readonly backends: readonly BackendConfig[];
};
export type DaemonConfig = v.InferOutput<typeof DaemonSchema>;
export type WorkerConfig = v.InferOutput<typeof WorkerSchema>;
export type TelemetryConfig = v.InferOutput<typeof TelemetrySchema>;
export type ModelProfile = v.InferOutput<typeof ModelProfileSchema>;
export type ThinkLevel = v.InferOutput<typeof ThinkLevelSchema>;
