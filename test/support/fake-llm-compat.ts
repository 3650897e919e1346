/**
 * Fakes of the servers of `llm.backends` (issue 27), built on the fake LM Studio's chat (an
 * OpenAI-style stream) with their own routes, states and refusals, as their projects document:
 * - llama.cpp's llama-server (tools/server/README.md): `/health` 503 `Loading model` while it
 *   loads (every route answers so), `/v1/models` with `meta`, `/props` with
 *   `default_generation_settings.n_ctx` and `total_slots`, `timings` on the last chunk;
 * - vLLM (vllm/entrypoints/openai): `/v1/models` with `max_model_len`, flat error bodies
 *   `{"object":"error",…}`, and the 400 of a server started without tool calling (vllm#9986);
 * - a keyed OpenAI-compatible endpoint: 401 `invalid_api_key` (echoing the key it was sent,
 *   as servers do in part), 429 with `retry-after` and `x-ratelimit-reset-requests`.
 */
import { jsonAnswer, loadedContextOf, maxContextOf, parameterCount } from './fake-llm-models.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from './fake-llm-server.ts';
import { estimatePromptTokens } from './fake-llm-reply.ts';
import type { Answer, FakeLlmServerOptions, FakeModel, RecordedRequest } from './fake-llm-types.ts';

/** Answers from the request itself, as startFakeLlmServer's `respond` (for batteries' concurrent runs). */
type Respond = FakeLlmServerOptions['respond'];

const CREATED = 1755211783;

/** What the fake llama-server reports of itself (`/props` `build_info`, `chat_template`; `/slots` chat format). */
export const BUILD_INFO = 'b6500-d9e0e7c8';
export const CHAT_TEMPLATE =
  '{%- for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{%- endfor %}';
export const CHAT_FORMAT = 'Hermes 2 Pro';
/** What the fake vLLM's `/version` says. */
export const VLLM_VERSION = '0.11.0';

/**
 * What a server's chat template refuses in a request's history (research/local-model-quirks-2.md):
 * a `system` message after index 0 (Q8: llama-server 500 `Jinja Exception: …`, vLLM 400), replayed
 * arguments that are not a JSON object (Q7/Q9: llama-server 500, vLLM 400 with Python's words),
 * and, for a Mistral-family template, a tool-call id that is not nine alphanumerics (Q10).
 */
function historyRefusal(
  body: unknown,
  server: 'llama_cpp' | 'vllm',
  mistralIds: boolean,
): { status: number; message: string } | undefined {
  const messages = ((body ?? {}) as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) return undefined;
  const status = server === 'llama_cpp' ? 500 : 400;
  for (const [index, message] of (messages as Record<string, unknown>[]).entries()) {
    if (message.role === 'system' && index > 0)
      return {
        status,
        message:
          server === 'llama_cpp'
            ? 'Jinja Exception: System message must be at the beginning.'
            : 'System message must be at the beginning.',
      };
    const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Record<string, unknown>[]) : [];
    for (const call of calls) {
      const id = call.id;
      if (typeof id !== 'string' || (mistralIds && !/^[A-Za-z0-9]{9}$/.test(id)))
        return {
          status,
          message: `Tool call id was ${String(id)} but must be a-z, A-Z, 0-9, with a length of 9`,
        };
      const text = (call.function as { arguments?: unknown } | undefined)?.arguments;
      let value: unknown;
      try {
        value = typeof text === 'string' ? JSON.parse(text) : text;
      } catch (error) {
        return {
          status,
          message:
            server === 'llama_cpp'
              ? 'Failed to parse tool call arguments as JSON'
              : pythonJsonError(String(text), error),
        };
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        return {
          status,
          message:
            server === 'llama_cpp'
              ? 'Failed to parse tool call arguments as JSON'
              : "'str' object has no attribute 'items'",
        };
    }
  }
  return undefined;
}

/** vLLM's 400 for a replayed call that is not JSON, in the words of Python's json module (vllm #43995). */
function pythonJsonError(text: string, error: unknown): string {
  const at = /position (\d+)/.exec(String(error))?.[1];
  const char = at === undefined ? text.length : Number(at);
  return `Expecting ',' delimiter: line 1 column ${char + 1} (char ${char})`;
}
const isChat = (r: RecordedRequest) => r.method === 'POST' && r.path === '/v1/chat/completions';

/** llama-server with one model; the first `loadingRequests` requests find it still loading. */
export function startFakeLlamaServer(options: {
  model: FakeModel;
  script?: ScriptedTurn[];
  loadingRequests?: number;
  slots?: number;
  respond?: Respond;
  /** A Mistral-family template: tool-call ids must be nine alphanumerics (Q10). */
  mistralIds?: boolean;
  /**
   * The template can do parallel calls (`chat_template_caps.supports_parallel_tool_calls`, true by
   * default); false: only a turn's first call is parsed, whatever the request asks (Q27).
   */
  parallelTemplate?: boolean;
}): Promise<FakeLlmServer> {
  let loading = options.loadingRequests ?? 0;
  const { model } = options;
  const parallel = options.parallelTemplate !== false;
  return startFakeLlmServer({
    flavor: 'lm_studio',
    streamStyle: 'openai',
    maxTokens: 'length',
    parallelToolCalls: parallel ? 'llama_cpp' : 'llama_cpp_serial_template',
    script: options.script ?? [],
    ...(options.respond === undefined ? {} : { respond: options.respond }),
    intercept: (request): Answer | undefined => {
      if (loading > 0) {
        loading -= 1;
        return jsonAnswer(503, { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
      }
      if (request.method === 'GET' && request.path === '/health') return jsonAnswer(200, { status: 'ok' });
      if (request.method === 'GET' && request.path === '/v1/models') {
        const meta = {
          vocab_type: 2,
          n_vocab: 151936,
          n_ctx_train: maxContextOf(model),
          n_embd: 4096,
          n_params: parameterCount(model.paramSize),
          size: Math.round(parameterCount(model.paramSize) * 0.6),
        };
        return jsonAnswer(200, {
          models: [{ name: model.id, model: model.id, type: 'model', capabilities: ['completion'] }],
          object: 'list',
          data: [{ id: model.id, object: 'model', created: CREATED, owned_by: 'llamacpp', meta }],
        });
      }
      if (request.method === 'GET' && request.path === '/props') {
        return jsonAnswer(200, {
          default_generation_settings: {
            id: 0,
            id_task: -1,
            n_ctx: loadedContextOf(model),
            speculative: false,
          },
          total_slots: options.slots ?? 1,
          model_path: `/models/${model.id}`,
          chat_template: CHAT_TEMPLATE,
          chat_template_caps: {
            supports_tools: model.toolUse !== false,
            supports_tool_calls: model.toolUse !== false,
            supports_parallel_tool_calls: parallel,
          },
          build_info: BUILD_INFO,
        });
      }
      if (request.method === 'GET' && request.path === '/slots')
        return jsonAnswer(
          200,
          Array.from({ length: options.slots ?? 1 }, (_, id) => ({
            id,
            id_task: -1,
            n_ctx: loadedContextOf(model),
            speculative: false,
            is_processing: false,
            params: { n_predict: -1, temperature: 0.8, chat_format: CHAT_FORMAT, reasoning_format: 'auto' },
          })),
        );
      if (isChat(request)) {
        const refusal = historyRefusal(request.body, 'llama_cpp', options.mistralIds === true);
        if (refusal !== undefined)
          return jsonAnswer(refusal.status, {
            error: { code: refusal.status, message: refusal.message, type: 'server_error' },
          });
        return undefined; // any model name: llama-server serves the one it loaded
      }
      return jsonAnswer(404, { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } });
    },
  });
}

/** vLLM serving `models`; started without `--enable-auto-tool-choice` when `toolCalling` is false. */
export function startFakeVllm(options: {
  models: FakeModel[];
  script?: ScriptedTurn[];
  toolCalling?: boolean;
  respond?: Respond;
  /** A Mistral-family template (or `--tokenizer-mode mistral`): ids must be nine alphanumerics (Q10). */
  mistralIds?: boolean;
  /** An XML-style `--tool-call-parser` (qwen3_coder): typeless parameters arrive as text (Q2). */
  xmlToolParser?: boolean;
}): Promise<FakeLlmServer> {
  const flat = (code: number, type: string, message: string) =>
    jsonAnswer(code, { object: 'error', message, type, param: null, code });
  return startFakeLlmServer({
    flavor: 'lm_studio',
    streamStyle: 'openai',
    maxTokens: 'vllm',
    parallelToolCalls: 'vllm',
    ...(options.xmlToolParser === true ? { typelessAsText: true } : {}),
    script: options.script ?? [],
    ...(options.respond === undefined ? {} : { respond: options.respond }),
    intercept: (request): Answer | undefined => {
      if (request.method === 'GET' && request.path === '/health')
        return { kind: 'body', status: 200, contentType: 'text/plain', body: '' };
      if (request.method === 'GET' && request.path === '/version')
        return jsonAnswer(200, { version: VLLM_VERSION });
      if (request.method === 'GET' && request.path === '/v1/models') {
        return jsonAnswer(200, {
          object: 'list',
          data: options.models.map((m) => ({
            id: m.id,
            object: 'model',
            created: CREATED,
            owned_by: 'vllm',
            root: m.id,
            parent: null,
            max_model_len: loadedContextOf(m),
            permission: [
              { id: `modelperm-${m.id.length}`, object: 'model_permission', allow_sampling: true },
            ],
          })),
        });
      }
      if (!isChat(request)) return flat(404, 'NotFoundError', 'Not Found');
      const body = (request.body ?? {}) as { model?: unknown; tools?: unknown[]; tool_choice?: unknown };
      if (!options.models.some((m) => m.id === body.model))
        return flat(404, 'NotFoundError', `The model \`${String(body.model)}\` does not exist.`);
      const auto = body.tool_choice === undefined || body.tool_choice === 'auto';
      if (options.toolCalling === false && (body.tools?.length ?? 0) > 0 && auto)
        return flat(
          400,
          'BadRequestError',
          '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        );
      const refusal = historyRefusal(request.body, 'vllm', options.mistralIds === true);
      if (refusal !== undefined) return flat(refusal.status, 'BadRequestError', refusal.message);
      return undefined;
    },
  });
}

/** An OpenAI-compatible endpoint taking `key`; the first `rateLimited` chats are refused 429. */
export function startFakeKeyed(options: {
  key: string;
  modelIds: string[];
  script?: ScriptedTurn[];
  rateLimited?: number;
  retryAfterS?: number;
  /** The key chat requests need, when it differs from the catalog's (a key revoked between the two). */
  chatKey?: string;
  respond?: Respond;
  /**
   * Each model's window: listed as `context_length` in `/v1/models` (as OpenRouter's catalog does),
   * and a request over it refused as OpenAI does (400 `context_length_exceeded`).
   */
  contextLength?: number;
}): Promise<FakeLlmServer> {
  let refusals = options.rateLimited ?? 0;
  return startFakeLlmServer({
    flavor: 'lm_studio',
    streamStyle: 'openai',
    script: options.script ?? [],
    ...(options.respond === undefined ? {} : { respond: options.respond }),
    intercept: (request): Answer | undefined => {
      const sent = /^Bearer (.*)$/.exec(request.headers.authorization ?? '')?.[1];
      if (sent !== (isChat(request) ? (options.chatKey ?? options.key) : options.key))
        return jsonAnswer(401, {
          error: {
            message: `Incorrect API key provided: ${sent ?? ''}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        });
      if (request.method === 'GET' && request.path === '/v1/models')
        return jsonAnswer(200, {
          object: 'list',
          data: options.modelIds.map((id) => ({
            id,
            object: 'model',
            created: CREATED,
            owned_by: 'system',
            ...(options.contextLength === undefined ? {} : { context_length: options.contextLength }),
          })),
        });
      if (!isChat(request))
        return jsonAnswer(404, { error: { message: 'Not found', type: 'invalid_request_error' } });
      // OpenAI refuses an empty tool list rather than reading it as none.
      const tools = (request.body as { tools?: unknown } | undefined)?.tools;
      if (Array.isArray(tools) && tools.length === 0)
        return jsonAnswer(400, {
          error: {
            message:
              "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            type: 'invalid_request_error',
            param: 'tools',
            code: 'empty_array',
          },
        });
      const tokens = estimatePromptTokens(request.body);
      if (options.contextLength !== undefined && tokens > options.contextLength)
        return jsonAnswer(400, {
          error: {
            message: `This model's maximum context length is ${options.contextLength} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        });
      if (refusals > 0) {
        refusals -= 1;
        const after = options.retryAfterS ?? 1;
        return {
          ...jsonAnswer(429, {
            error: {
              message: `Rate limit reached on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in ${after}s.`,
              type: 'requests',
              param: null,
              code: 'rate_limit_exceeded',
            },
          }),
          headers: {
            'retry-after': String(after),
            'x-ratelimit-limit-requests': '3',
            'x-ratelimit-remaining-requests': '0',
            'x-ratelimit-reset-requests': `${after}s`,
          },
        } as Answer;
      }
      return undefined;
    },
  });
}

/**
 * llama-server's answer when its PEG parser cannot read the model's output (ggml-org/llama.cpp
 * #20761, agentscope-ai/QwenPaw #2839: research/local-model-quirks-2.md Q17): a 500 whose message
 * carries the output from position `pos` on.
 */
export function llamaParseFailure(pos: number, rest: string): ScriptedTurn {
  return {
    status: 500,
    body: {
      error: { code: 500, message: `Failed to parse input at pos ${pos}: ${rest}`, type: 'server_error' },
    },
  };
}

/**
 * Ollama's built-in parser failing on the model's output (ollama/ollama #12380, Q18): on the
 * native stream, 200 and then one error line; the generation is cancelled.
 */
export function ollamaParserError(message: string): ScriptedTurn {
  return { sseError: { error: message } };
}
