/** Which real server the fake imitates: routes, field names, error bodies and stream quirks. */
export type FakeFlavor = 'lm_studio' | 'ollama';

/** One model in the fake's catalog; every catalog endpoint of the flavor is derived from it. */
export interface FakeModel {
  /** e.g. 'qwen/qwen3-coder-30b' (LM Studio) or 'llama3.2:latest' (Ollama). */
  id: string;
  /** Default 'llm'. */
  type?: 'llm' | 'vlm' | 'embedding';
  /** true: tool capability advertised; false: known to lack it; undefined: capability field absent. */
  toolUse?: boolean;
  /** Default true. */
  loaded?: boolean;
  /** Ollama details.parameter_size ('8.0B', '566.70M', '137M'); LM Studio v1 params_string. */
  paramSize?: string;
  /** Context the model is loaded with (LM Studio loaded_context_length, Ollama /api/ps context_length). */
  contextLength?: number;
  /** Trained maximum (LM Studio max_context_length, Ollama model_info['<arch>.context_length']). */
  maxContextLength?: number;
  /** A thinking model: Ollama's `thinking` capability (0.9.0+), LM Studio v1's `capabilities.reasoning`. */
  thinking?: boolean;
  /** LM Studio loads it at no more than this, whatever context is asked for (memory). */
  loadsAtMost?: number;
  /**
   * Refuse a prompt over the model's window with the server's real overflow answer; a number is
   * the window the server really holds when it is less than it reports (LM Studio 0.4.x's
   * auto-fit shrinking a load silently).
   */
  enforceWindow?: boolean | number;
  /** LM Studio v1's loaded_instances[].config.parallel: the requests it serves at once (default 4). */
  parallel?: number;
  /** Answer every chat request from the request itself, not the script (fake-llm-behaviour.ts). */
  behaviour?: import('./fake-llm-behaviour.ts').FakeBehaviour;
  /** The dialect a `dialect` model writes its calls in; default 'hermes'. */
  dialect?: import('./fake-llm-behaviour.ts').FakeDialect;
  /** A behaving model waits this long before it answers (a slow model). */
  slowMs?: number;
  /**
   * Ollama `/api/show` `parser` and `renderer` (Q34): a built-in parser's name (`qwen3-coder`), or
   * `''` for a model whose template parses its calls; absent: the fields are left out (older servers).
   */
  parser?: string;
  renderer?: string;
  /** Ollama's `digest` of the model file (default: a hash of the id); change it to imitate a new pull. */
  digest?: string;
}

/** One load of a model: through the REST API, or JIT on a chat request. */
export interface FakeLoad {
  readonly model: string;
  readonly via: 'api' | 'jit';
  readonly contextLength: number;
  /** When it happened (Date.now()). */
  readonly at: number;
}

/** A tool call the scripted model makes; arguments may be given as text (even malformed) or as an object. */
export interface ScriptedToolCall {
  name: string;
  arguments: string | Record<string, unknown>;
  id?: string;
}

/** What the scripted model says in one turn. */
export interface ScriptedReply {
  content?: string;
  toolCalls?: ScriptedToolCall[];
  /** Defaults to 'tool_calls' when toolCalls are present, else 'stop'. */
  finishReason?: string;
  usage?: { prompt: number; completion: number };
  /**
   * What the model reasons, streamed before the content in the server's own field: LM Studio's
   * `delta.reasoning_content` (the DeepSeek-style setting, the default here) or `delta.reasoning`
   * (0.3.23+, gpt-oss), Ollama's `/v1` `delta.reasoning` and native `message.thinking`.
   */
  reasoning?: string;
  /** Which OpenAI-compatible delta field carries `reasoning`; default by flavor (see above). */
  reasoningField?: 'reasoning_content' | 'reasoning';
  /** `usage.completion_tokens_details.reasoning_tokens`, when the server counts them. */
  reasoningTokens?: number;
  /** Stream the content in pieces of this many characters (cuts tags at awkward places); default word by word. */
  chunkChars?: number;
  /** llama-server's `timings` object, on the stream's last chunk (cache_n, prompt_n, …). */
  timings?: Record<string, number>;
  /**
   * Tool-call deltas without `index`, as some local servers stream them (jin-bo/agentao PR #117,
   * goose #10023: research/local-model-quirks-2.md Q29); `openai` stream style only.
   */
  noIndex?: boolean;
  /**
   * Each call's head and its first argument fragment in one chunk, both with the call's index (vLLM
   * with speculative decoding, openai/openai-python #3203: Q29); `openai` stream style only.
   */
  indexTwiceInChunk?: boolean;
  /** Every call on index 0, each with its own id (a gateway flattening parallel calls, pi #8861: Q29). */
  sharedIndex?: boolean;
}

/** Chunking style of an OpenAI-compatible stream. */
export type StreamStyle = 'openai' | 'lmstudio_legacy' | 'ollama';

/** One scripted answer to one chat request, consumed in order. */
export type ScriptedTurn =
  | {
      reply: ScriptedReply;
      stream?: StreamStyle;
      delayMs?: number;
      endless?: boolean;
      /**
       * The stream ends (the response closed cleanly) with no finish chunk and no usage chunk:
       * `after_done` still sends `[DONE]`, `closed` does not — as Ollama's `/v1` does after a
       * parser error it swallowed (research/local-model-quirks-2.md Q18). OpenAI-style streams only.
       */
      unfinished?: 'after_done' | 'closed';
    }
  | { status: number; body: unknown; contentType?: string; headers?: Record<string, string> }
  | { cutAfterChunks: number; reply: ScriptedReply; stream?: StreamStyle }
  | { sseError: unknown }
  | { hang: true };

/** A request as the fake received it; body is parsed JSON when it parses, else the raw text. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  receivedAt: number;
}

/** A running fake server. */
export interface FakeLlmServer {
  /** Base URL with no path, e.g. http://127.0.0.1:41234. */
  readonly url: string;
  /** Every request, in order. */
  readonly requests: RecordedRequest[];
  /** Only the chat requests (/v1/chat/completions and /api/chat). */
  chatRequests(): RecordedRequest[];
  /** The most chat requests the server was answering at once. */
  maxChatsInFlight(): number;
  /** Appends turns to the script. */
  push(...turns: ScriptedTurn[]): void;
  /** Appends turns to the script of requests whose first user message contains `match`. */
  pushFor(match: string, ...turns: ScriptedTurn[]): void;
  /** Every model load: through `POST /api/v1/models/load`, or JIT (with `jitAutoEvict`). */
  loads(): FakeLoad[];
  /** The instances unloaded through `POST /api/v1/models/unload`, in order. */
  unloads(): string[];
  /** Stops at once, destroying open sockets, as a backend that dies would. */
  stop(): Promise<void>;
}

/** Options of startFakeLlmServer. */
export interface FakeLlmServerOptions {
  flavor: FakeFlavor;
  /** The catalog. When omitted, chat accepts any model id and the catalog endpoints list nothing. */
  models?: FakeModel[];
  script?: ScriptedTurn[];
  /**
   * Scripts chosen by the request: a chat request whose first user message contains `match`
   * takes its turns from that script, in order (so runs of several tasks can be told apart);
   * requests matching none take from `script`.
   */
  byTask?: { match: string; script: ScriptedTurn[] }[];
  /** LM Studio >= 0.4.0 serves /api/v1/models; older builds answer it like any unknown route. */
  lmStudioV1Api?: boolean;
  /** Reported by /api/version; also gates version-dependent fields. Default '0.12.6'. */
  ollamaVersion?: string;
  port?: number;
  /**
   * Answers a chat request from the request itself, before any script: return a turn, or
   * undefined to take the next scripted one. For concurrent runs whose turns would interleave.
   */
  respond?: (request: {
    model: string;
    messages: readonly FakeChatMessage[];
    /** The names of the tools the request offers (none for a turn asked without tools). */
    tools: readonly string[];
  }) => ScriptedTurn | undefined;
  /**
   * Report usage as all zeros, as some LM Studio builds do for streamed answers (and servers
   * behind proxies that drop it): a client must estimate occupancy itself.
   */
  zeroUsage?: boolean;
  /**
   * Answers a request before the flavor's routes, or undefined to let them: how the fakes of
   * llama-server, vLLM and keyed endpoints (fake-llm-compat.ts) add their routes, states and refusals.
   */
  intercept?: (request: RecordedRequest) => Answer | undefined;
  /**
   * Honour the request's `max_tokens` (4 characters a token): a reply longer than it is cut there,
   * content first, then the calls' arguments. `finish_reason` says `length`, except on vLLM's
   * stream once a call delta went out, where it says `tool_calls` (vllm #53269, #58228:
   * research/local-model-quirks-2.md Q12).
   */
  maxTokens?: 'length' | 'vllm';
  /**
   * Ollama's template-based tool parsing (no built-in parser: `/api/show` `parser` empty): a call
   * naming no offered tool — a model that used the tool's description as its name — fails the
   * parse, and the answer is an empty message whose tokens are counted (ollama #17274, Q19).
   */
  templateToolParser?: boolean;
  /**
   * vLLM's XML-style tool parsers (qwen3_coder, glm4_moe…): each parameter is converted by the
   * type its schema in the request declares, and one without a `type` — an unresolved `$ref` —
   * arrives as a JSON string (vllm #46924: research/local-model-quirks-2.md Q2).
   */
  typelessAsText?: boolean;
  /**
   * How the server treats a request's `parallel_tool_calls` (fake-llm-reply.ts parallelAsAsked,
   * research/local-model-quirks-2.md Q27, Q28); absent: every scripted call is answered.
   */
  parallelToolCalls?: 'llama_cpp' | 'llama_cpp_serial_template' | 'vllm';
  /** The chunking of streamed replies a turn does not choose; default by flavor. */
  streamStyle?: StreamStyle;
  /**
   * LM Studio's JIT loading with Auto-Evict (its default): a chat request for a model not loaded
   * loads it and evicts the model JIT-loaded before it, each load recorded in `loads()`.
   */
  jitAutoEvict?: boolean;
  /**
   * A GPU's prefill: each chat request waits for the part of its prompt the server's one cached
   * prompt does not share, at this many tokens a second (fake-llm-prefill.ts). Absent: no wait.
   */
  prefillTokensPerSecond?: number;
  /**
   * With `prefillTokensPerSecond`: each streamed answer reports its simulated prefill in
   * llama-server's `timings` (cache_n, prompt_n, prompt_ms, prompt_per_second) on its last chunk.
   */
  prefillTimings?: boolean;
  /**
   * With `prefillTokensPerSecond`: llama-server's host-memory prompt cache (`--cache-ram`), prompts
   * evicted from the slot are kept and restored (cache_n counts them) instead of prefilled again.
   */
  prefillHostCache?: boolean;
}

/** A chat message as a responder sees it: non-string content as JSON. */
export interface FakeChatMessage {
  role: string;
  content: string;
}

/** What a route handler wants written; the server turns it into bytes. */
export type Answer =
  | { kind: 'body'; status: number; contentType: string; body: string; headers?: Record<string, string> }
  /** frames are written one by one; cut destroys the socket after them instead of ending the response. */
  | { kind: 'stream'; contentType: string; frames: string[]; cut: boolean; hold?: boolean }
  | { kind: 'hang' };
