import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  lmStudioCatalog,
  lmStudioUnknownRoute,
  ollamaCatalog,
  ollamaUnknownRoute,
} from './fake-llm-catalog.ts';
import { behave } from './fake-llm-behaviour.ts';
import { findModel, jsonAnswer, loadedContextOf, ollamaRegistryName } from './fake-llm-models.ts';
import { FakeModelLoads } from './fake-llm-loads.ts';
import { llamaTimings, type PrefillClock, type Prefilled, prefillClock } from './fake-llm-prefill.ts';
import { ollamaNativeBody, ollamaNativeShapeError, ollamaNativeStream } from './fake-llm-ollama-chat.ts';
import {
  defaultStyle,
  openAiReplyBody,
  openAiStreamFrames,
  type StreamFrames,
} from './fake-llm-openai-chat.ts';
import {
  type ChatContext,
  cutAtMaxTokens,
  dropUnreadCalls,
  parallelAsAsked,
  typelessAsText,
  estimatePromptTokens,
  resolveReply,
} from './fake-llm-reply.ts';
import type {
  Answer,
  FakeLlmServer,
  FakeChatMessage,
  FakeLlmServerOptions,
  FakeModel,
  RecordedRequest,
  ScriptedTurn,
} from './fake-llm-types.ts';

export type {
  FakeChatMessage,
  FakeFlavor,
  FakeLoad,
  FakeLlmServer,
  FakeLlmServerOptions,
  FakeModel,
  RecordedRequest,
  ScriptedReply,
  ScriptedToolCall,
  ScriptedTurn,
  StreamStyle,
} from './fake-llm-types.ts';

const CHAT_PATHS = new Set(['/v1/chat/completions', '/api/chat']);

type ChatApi = 'openai' | 'native';

/**
 * Starts a fake LM Studio or Ollama server on loopback. Chat requests consume the script in order;
 * catalog routes answer from `models` with the real servers' field names and quirks.
 */
export async function startFakeLlmServer(options: FakeLlmServerOptions): Promise<FakeLlmServer> {
  const { flavor } = options;
  const script: ScriptedTurn[] = [...(options.script ?? [])];
  const byTask = (options.byTask ?? []).map((entry) => ({ match: entry.match, script: [...entry.script] }));
  const scriptFor = (body: object): ScriptedTurn[] => {
    const text = firstUserText(body);
    return byTask.find((entry) => text.includes(entry.match))?.script ?? script;
  };
  const requests: RecordedRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const sockets = new Set<Socket>();
  const ollamaVersion = options.ollamaVersion ?? '0.12.6';

  const modelLoads = new FakeModelLoads(options.models ?? [], options.jitAutoEvict === true);

  const route = async (method: string, path: string, body: unknown, rawBody: string): Promise<Answer> => {
    if (
      method === 'POST' &&
      (path === '/v1/chat/completions' || (flavor === 'ollama' && path === '/api/chat'))
    ) {
      return chat(path === '/api/chat' ? 'native' : 'openai', body, rawBody);
    }
    if (
      flavor === 'lm_studio' &&
      method === 'POST' &&
      path === '/api/v1/models/load' &&
      options.lmStudioV1Api === true
    ) {
      return modelLoads.load(body);
    }
    if (
      flavor === 'lm_studio' &&
      method === 'POST' &&
      path === '/api/v1/models/unload' &&
      options.lmStudioV1Api === true
    ) {
      return modelLoads.unload(body);
    }
    if (flavor === 'lm_studio') {
      return (
        lmStudioCatalog(method, path, options.models ?? [], options.lmStudioV1Api === true) ??
        lmStudioUnknownRoute(method, path)
      );
    }
    return ollamaCatalog(method, path, body, options.models ?? [], ollamaVersion) ?? ollamaUnknownRoute();
  };

  /** An error body in the shape the flavor and endpoint use. */
  const chatError = (api: ChatApi, status: number, message: string): Answer => {
    if (flavor === 'lm_studio' || api === 'native') return jsonAnswer(status, { error: message });
    // Ollama's OpenAI layer maps 400 and 404 to these types since v0.18.0 (middleware/openai.go).
    const type = status === 400 ? 'invalid_request_error' : status === 404 ? 'not_found_error' : 'api_error';
    return jsonAnswer(status, { error: { message, type, param: null, code: null } });
  };

  const prefill =
    options.prefillTokensPerSecond === undefined
      ? undefined
      : prefillClock(options.prefillTokensPerSecond, options.prefillHostCache === true);
  let prefilling: Promise<unknown> = Promise.resolve();
  const prefillInTurn = (body: unknown, clock: PrefillClock): Promise<Prefilled> => {
    const turn = prefilling.then(async () => {
      const prefilled = clock.take(body);
      await sleep(prefilled.ms);
      return prefilled;
    });
    prefilling = turn;
    return turn;
  };

  const chat = async (api: ChatApi, body: unknown, rawBody: string): Promise<Answer> => {
    if (typeof body !== 'object' || body === null) {
      return chatError(api, 400, `invalid request body: ${rawBody.slice(0, 80) || '(empty)'}`);
    }
    if (api === 'native') {
      const shapeError = ollamaNativeShapeError(body);
      if (shapeError) return shapeError;
    }
    const request = body as {
      model?: unknown;
      stream?: unknown;
      tools?: unknown;
      stream_options?: unknown;
      max_tokens?: unknown;
      think?: unknown;
    };
    const requested = typeof request.model === 'string' ? request.model : '';
    if (flavor === 'ollama' && requested === '') return chatError(api, 400, 'model is required');
    let model: FakeModel | undefined;
    if (options.models) {
      model = findModel(options.models, requested, flavor);
      if (!model) return modelNotFound(api, requested, options.models);
      if (flavor === 'ollama' && model.type === 'embedding') {
        return chatError(api, 400, `"${requested}" does not support chat`);
      }
      const offersTools = Array.isArray(request.tools) && request.tools.length > 0;
      if (flavor === 'ollama' && offersTools && model.toolUse === false) {
        return chatError(api, 400, `${ollamaRegistryName(model.id)} does not support tools`);
      }
      // `think` on a model without the thinking capability is a 400 (ollama server/routes_test.go).
      if (
        flavor === 'ollama' &&
        request.think !== undefined &&
        request.think !== false &&
        model.thinking !== true
      ) {
        return chatError(api, 400, `"${requested}" does not support thinking`);
      }
      const overflow =
        model.enforceWindow === undefined || model.enforceWindow === false
          ? undefined
          : windowOverflow(api, body, model);
      if (overflow !== undefined) return overflow;
      if (flavor === 'lm_studio') modelLoads.chat(model);
    }
    // One slot: prefills run one at a time, in arrival order, as a server with one slot queues them.
    const prefilled = prefill === undefined ? undefined : await prefillInTurn(body, prefill);
    // The prefill as llama-server reports it, on the turn's last chunk (a scripted reply's own wins).
    const timed = (turn: ScriptedTurn): ScriptedTurn =>
      prefilled === undefined || options.prefillTimings !== true || !('reply' in turn)
        ? turn
        : { ...turn, reply: { timings: llamaTimings(prefilled), ...turn.reply } };
    // A behaving model answers from the request itself, before any responder or script.
    if (model?.behaviour !== undefined) {
      const stream = api === 'native' ? request.stream !== false : request.stream === true;
      const usage = request.stream_options as { include_usage?: unknown } | undefined;
      return renderTurn(api, behave(model, body), {
        model: flavor === 'lm_studio' ? model.id : requested,
        stream,
        includeUsage: usage?.include_usage === true,
        promptTokens: estimatePromptTokens(body),
      });
    }
    // A responder answers from the request itself (which model, which task, how far the
    // conversation is), so concurrent runs cannot take each other's turns.
    const responded = options.respond?.({
      model: requested,
      messages: chatMessages(body),
      tools: toolNames(body),
    });
    if (responded !== undefined) {
      const stream = api === 'native' ? request.stream !== false : request.stream === true;
      const usage = request.stream_options as { include_usage?: unknown } | undefined;
      return renderTurn(api, timed(responded), {
        model: flavor === 'lm_studio' ? (model?.id ?? requested) : requested,
        stream,
        includeUsage: usage?.include_usage === true,
        promptTokens: estimatePromptTokens(body),
        ...(options.zeroUsage === true ? { zeroUsage: true } : {}),
      });
    }
    const turn = scriptFor(body).shift();
    if (!turn)
      return chatError(api, 500, 'fake server: script exhausted (no scripted turn left for this request)');
    // The native API streams unless told otherwise; the OpenAI API does not.
    const stream = api === 'native' ? request.stream !== false : request.stream === true;
    const streamOptions = request.stream_options as { include_usage?: unknown } | undefined;
    const ctx: ChatContext = {
      // LM Studio names the model that answered; Ollama echoes the string it was sent.
      model: flavor === 'lm_studio' ? (model?.id ?? requested) : requested,
      stream,
      includeUsage: streamOptions?.include_usage === true,
      promptTokens: estimatePromptTokens(body),
      ...(options.zeroUsage === true ? { zeroUsage: true } : {}),
      ...(typeof request.max_tokens === 'number' ? { maxTokens: request.max_tokens } : {}),
      offered: toolNames(body),
      tools: (body as { tools?: unknown }).tools,
      parallelToolCalls: (body as { parallel_tool_calls?: unknown }).parallel_tool_calls,
    };
    return renderTurn(api, timed(turn), ctx);
  };

  /**
   * A prompt over the model's window, answered as the real servers do (research/lm-server-protocols.md):
   * LM Studio streaming, 200 with `event: error` "Input does not fit in context length" (#2322);
   * LM Studio otherwise, 400 "…greater than the context length (n_keep: N>= n_ctx: W)…";
   * Ollama's `/api/chat` with `truncate: false` (v0.12.4+), 400 "the input length exceeds the context length".
   */
  const windowOverflow = (api: ChatApi, body: object, model: FakeModel): Answer | undefined => {
    const request = body as { stream?: unknown; options?: { num_ctx?: unknown } };
    const window =
      typeof model.enforceWindow === 'number'
        ? model.enforceWindow
        : api === 'native' && typeof request.options?.num_ctx === 'number'
          ? request.options.num_ctx
          : loadedContextOf(model);
    const tokens = estimatePromptTokens(body);
    if (tokens <= window) return undefined;
    if (api === 'native') return jsonAnswer(400, { error: 'the input length exceeds the context length' });
    if (flavor === 'lm_studio' && request.stream === true) {
      const message = `Input does not fit in context length. The input has ${tokens} tokens, but the context length only supports ${window} tokens.`;
      const frame = `event: error\ndata: ${JSON.stringify({ error: { message }, message })}\n\n`;
      return { kind: 'stream', contentType: 'text/event-stream', frames: [frame], cut: false };
    }
    return chatError(
      api,
      400,
      `The number of tokens to keep from the initial prompt is greater than the context length (n_keep: ${tokens}>= n_ctx: ${window}). Try to load the model with a larger context length, or provide a shorter input.`,
    );
  };

  const modelNotFound = (api: ChatApi, requested: string, models: FakeModel[]): Answer => {
    if (flavor === 'ollama') return chatError(api, 404, `model '${requested}' not found`);
    const examples = models.map((m) => m.id).join(', ');
    return jsonAnswer(400, {
      error: {
        message: `Invalid model identifier "${requested}". Please specify a valid downloaded model (e.g., ${examples}).`,
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_found',
      },
    });
  };

  const renderTurn = async (api: ChatApi, turn: ScriptedTurn, ctx: ChatContext): Promise<Answer> => {
    if ('hang' in turn) return { kind: 'hang' };
    if ('status' in turn) {
      const text = typeof turn.body === 'string' ? turn.body : JSON.stringify(turn.body);
      const contentType =
        turn.contentType ??
        (typeof turn.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8');
      return {
        kind: 'body',
        status: turn.status,
        contentType,
        body: text,
        ...(turn.headers ? { headers: turn.headers } : {}),
      };
    }
    if ('sseError' in turn) {
      // Native Ollama reports a mid-stream error as an NDJSON line with an error field, still HTTP 200.
      if (api === 'native') {
        return {
          kind: 'stream',
          contentType: 'application/x-ndjson',
          frames: [`${JSON.stringify(turn.sseError)}\n`],
          cut: false,
        };
      }
      const frame = `event: error\ndata: ${JSON.stringify(turn.sseError)}\n\n`;
      return { kind: 'stream', contentType: 'text/event-stream', frames: [frame], cut: false };
    }
    if ('delayMs' in turn && turn.delayMs) await sleep(turn.delayMs);
    const whole = resolveReply(turn.reply, ctx.promptTokens);
    const read = options.typelessAsText === true ? typelessAsText(whole, ctx.tools) : whole;
    const asked =
      options.parallelToolCalls === undefined
        ? read
        : parallelAsAsked(read, options.parallelToolCalls, ctx.parallelToolCalls);
    const parsed = options.templateToolParser === true ? dropUnreadCalls(asked, ctx.offered ?? []) : asked;
    const resolved =
      options.maxTokens === undefined || ctx.maxTokens === undefined
        ? parsed
        : cutAtMaxTokens(parsed, ctx.maxTokens, options.maxTokens, ctx.stream);
    const reply = ctx.zeroUsage === true ? { ...resolved, usage: { prompt: 0, completion: 0 } } : resolved;
    const cutAfter = 'cutAfterChunks' in turn ? turn.cutAfterChunks : undefined;
    if (!ctx.stream && cutAfter === undefined) {
      return api === 'native' ? ollamaNativeBody(reply, ctx) : openAiReplyBody(reply, flavor, ctx);
    }
    const frames: StreamFrames =
      api === 'native'
        ? ollamaNativeStream(reply, ctx)
        : openAiStreamFrames(reply, turn.stream ?? options.streamStyle ?? defaultStyle(flavor), ctx);
    const contentType = api === 'native' ? 'application/x-ndjson' : 'text/event-stream';
    if ('endless' in turn && turn.endless) {
      // Thinking that never ends (ollama #12606): the reasoning streams, then nothing, the
      // connection held open until the client gives up.
      return { kind: 'stream', contentType, frames: frames.body, cut: false, hold: true };
    }
    const unfinished = 'unfinished' in turn ? turn.unfinished : undefined;
    if (unfinished !== undefined && api === 'openai') {
      const unfinishedFrames =
        unfinished === 'after_done' ? [...frames.body, 'data: [DONE]\n\n'] : frames.body;
      return { kind: 'stream', contentType, frames: unfinishedFrames, cut: false };
    }
    if (cutAfter !== undefined) {
      // A non-streaming request that is cut gets no bytes at all, like a server dying mid-generation.
      const sent = ctx.stream ? frames.body.slice(0, cutAfter) : [];
      return { kind: 'stream', contentType, frames: sent, cut: true };
    }
    return { kind: 'stream', contentType, frames: [...frames.body, ...frames.tail], cut: false };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const method = req.method ?? 'GET';
    const body = parseBody(rawBody);
    const recorded = { method, path, headers: flattenHeaders(req), body, receivedAt: Date.now() };
    requests.push(recorded);
    const isChat = method === 'POST' && CHAT_PATHS.has(path);
    if (isChat) maxInFlight = Math.max(maxInFlight, ++inFlight);
    try {
      await write(res, options.intercept?.(recorded) ?? (await route(method, path, body, rawBody)));
    } finally {
      if (isChat) inFlight -= 1;
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`fake server bug: ${error instanceof Error ? error.stack : String(error)}`);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake server: no TCP address');

  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    chatRequests: () => requests.filter((r) => r.method === 'POST' && CHAT_PATHS.has(r.path)),
    maxChatsInFlight: () => maxInFlight,
    loads: () => [...modelLoads.loads],
    unloads: () => [...modelLoads.unloads],
    push: (...turns) => {
      script.push(...turns);
    },
    pushFor: (match, ...turns) => {
      const entry = byTask.find((candidate) => candidate.match === match);
      if (entry) entry.script.push(...turns);
      else byTask.push({ match, script: [...turns] });
    },
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await closed;
    },
  };
}

async function write(res: ServerResponse, answer: Answer): Promise<void> {
  if (answer.kind === 'hang') return; // the socket stays open until the client aborts or stop() runs
  if (answer.kind === 'body') {
    res.writeHead(answer.status, {
      ...answer.headers,
      'Content-Type': answer.contentType,
      'Content-Length': Buffer.byteLength(answer.body),
    });
    res.end(answer.body);
    return;
  }
  res.writeHead(200, { 'Content-Type': answer.contentType, 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  for (const frame of answer.frames) {
    if (res.destroyed) return;
    await new Promise<void>((resolve) => res.write(frame, () => resolve()));
    // Yield between frames so they reach the client as separate reads, as a real token stream does.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (answer.hold) return; // the socket stays open until the client aborts or stop() runs
  if (answer.cut) res.socket?.destroy();
  else res.end();
}

/** The text of a chat request's first user message (string content, or the text parts of an array). */
function firstUserText(body: object): string {
  const messages = (body as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) return '';
  const user = messages.find(
    (m): m is { role: string; content: unknown } => (m as { role?: unknown })?.role === 'user',
  );
  if (user === undefined) return '';
  if (typeof user.content === 'string') return user.content;
  if (Array.isArray(user.content)) {
    return user.content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  }
  return '';
}

/** The names of the tools a chat request offers. */
function toolNames(body: object): string[] {
  const tools = (body as { tools?: unknown }).tools;
  if (!Array.isArray(tools)) return [];
  return tools.map((tool: { function?: { name?: unknown } }) =>
    typeof tool?.function?.name === 'string' ? tool.function.name : '',
  );
}

/** A chat request's messages, as the responder sees them. */
function chatMessages(body: object): FakeChatMessage[] {
  const messages = (body as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) return [];
  return messages.map((m: { role?: unknown; content?: unknown }) => ({
    role: typeof m?.role === 'string' ? m.role : '',
    content: typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? ''),
  }));
}

function parseBody(raw: string): unknown {
  if (raw === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
