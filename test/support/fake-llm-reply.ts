import type { ScriptedReply } from './fake-llm-types.ts';

/** A scripted reply with defaults filled in and arguments in both wire forms. */
export interface ResolvedReply {
  content: string | undefined;
  toolCalls: { id: string | undefined; name: string; argumentsText: string; argumentsObject: unknown }[];
  finishReason: string;
  usage: { prompt: number; completion: number };
  reasoning: string | undefined;
  reasoningField: 'reasoning_content' | 'reasoning' | undefined;
  reasoningTokens: number | undefined;
  chunkChars: number | undefined;
  timings: Record<string, number> | undefined;
  noIndex: boolean;
  indexTwiceInChunk: boolean;
  sharedIndex: boolean;
}

/** What the request implies for rendering a reply. */
export interface ChatContext {
  /** The model string put in the response (LM Studio: its id; Ollama: the string the client sent). */
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** Estimated prompt tokens, used when the turn scripts no usage. */
  promptTokens: number;
  /** The names of the tools the request offered. */
  offered?: readonly string[];
  /** The request's `tools`, as sent. */
  tools?: unknown;
  /** The request's `max_tokens`, when it set one. */
  maxTokens?: number;
  /** Usage reported as zeros whatever was scripted (FakeLlmServerOptions.zeroUsage). */
  zeroUsage?: boolean;
  /** The request's `parallel_tool_calls`, as sent (absent: undefined). */
  parallelToolCalls?: unknown;
}

/** Fills in finish_reason and usage, and renders arguments as text (OpenAI wire) and as an object (Ollama native). */
export function resolveReply(reply: ScriptedReply, promptTokens: number): ResolvedReply {
  const toolCalls = (reply.toolCalls ?? []).map((call) => {
    const argumentsText =
      typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    return { id: call.id, name: call.name, argumentsText, argumentsObject: toObject(call.arguments) };
  });
  const generated = (reply.content ?? '').length + toolCalls.reduce((n, c) => n + c.argumentsText.length, 0);
  return {
    content: reply.content,
    toolCalls,
    finishReason: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: reply.usage ?? { prompt: promptTokens, completion: Math.max(1, Math.ceil(generated / 4)) },
    reasoning: reply.reasoning,
    reasoningField: reply.reasoningField,
    reasoningTokens: reply.reasoningTokens,
    chunkChars: reply.chunkChars,
    timings: reply.timings,
    noIndex: reply.noIndex === true,
    indexTwiceInChunk: reply.indexTwiceInChunk === true,
    sharedIndex: reply.sharedIndex === true,
  };
}

// Native Ollama always sends an object; a scripted string that is not a JSON object is passed through
// unchanged so a test can still provoke a malformed call.
function toObject(args: string | Record<string, unknown>): unknown {
  if (typeof args !== 'string') return args;
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : args;
  } catch {
    return args;
  }
}

/** The content's streamed pieces: fixed-size when the script says so, else word by word. */
export function contentPieces(reply: Pick<ResolvedReply, 'content' | 'chunkChars'>): string[] {
  const text = reply.content ?? '';
  if (reply.chunkChars === undefined || text === '') return text === '' ? [] : splitText(text);
  const chars = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += reply.chunkChars)
    pieces.push(chars.slice(i, i + reply.chunkChars).join(''));
  return pieces;
}

/** Splits text into word-sized pieces, as models stream it token by token. */
export function splitText(text: string): string[] {
  const pieces = text.match(/\s*\S+|\s+$/g) ?? [];
  return pieces.length > 0 ? pieces : [text];
}

/** Splits argument text into up to four fragments (by code point), so the client must concatenate them. */
export function splitFragments(text: string): string[] {
  const chars = Array.from(text);
  const size = Math.max(1, Math.ceil(chars.length / 4));
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(''));
  return pieces;
}

/**
 * A rough token count of a request's prompt, so usage looks plausible without a script: the
 * messages and the tools, which a server's template renders into the prompt and counts too.
 */
export function estimatePromptTokens(body: unknown): number {
  const { messages, tools } =
    typeof body === 'object' && body !== null ? (body as { messages?: unknown; tools?: unknown }) : {};
  const toolsChars = Array.isArray(tools) && tools.length > 0 ? JSON.stringify(tools).length : 0;
  return Math.max(1, Math.ceil((JSON.stringify(messages ?? []).length + toolsChars) / 4));
}

/**
 * A reply cut at `maxTokens` (4 characters a token), as a server stops generating there: the
 * content first, then each call's arguments in turn; calls not begun are dropped. `finish_reason`
 * is `length`, or on vLLM's stream `tool_calls` once a call began (research/local-model-quirks-2.md Q12).
 */
export function cutAtMaxTokens(
  reply: ResolvedReply,
  maxTokens: number,
  mode: 'length' | 'vllm',
  stream: boolean,
): ResolvedReply {
  if (reply.usage.completion <= maxTokens) return reply;
  let room = maxTokens * 4;
  const take = (text: string) => {
    const kept = text.slice(0, Math.max(0, room));
    room -= kept.length;
    return kept;
  };
  const content = reply.content === undefined ? undefined : take(reply.content);
  const toolCalls: ResolvedReply['toolCalls'] = [];
  for (const call of reply.toolCalls) {
    if (room <= 0) break;
    const argumentsText = take(call.argumentsText);
    toolCalls.push({ ...call, argumentsText, argumentsObject: argumentsText });
  }
  const calledOnStream = mode === 'vllm' && stream && toolCalls.length > 0;
  return {
    ...reply,
    content,
    toolCalls,
    finishReason: calledOnStream ? 'tool_calls' : 'length',
    usage: { prompt: reply.usage.prompt, completion: maxTokens },
  };
}

/**
 * Ollama's template parser failing on a call that names no offered tool (ollama #17274, Q19): the
 * text it could not read is dropped, so the message is empty, while the tokens stay counted.
 */
export function dropUnreadCalls(reply: ResolvedReply, offered: readonly string[]): ResolvedReply {
  if (reply.toolCalls.every((call) => offered.includes(call.name))) return reply;
  return { ...reply, content: '', toolCalls: [], finishReason: 'stop' };
}

/** vLLM's XML parsers: a parameter whose schema has no `type` (an unresolved `$ref`) comes as text (Q2). */
export function typelessAsText(reply: ResolvedReply, tools: unknown): ResolvedReply {
  const schemas = new Map<string, Record<string, { type?: unknown }>>();
  for (const tool of Array.isArray(tools) ? tools : []) {
    const fn = (tool as { function?: { name?: string; parameters?: { properties?: object } } }).function;
    if (fn?.name !== undefined)
      schemas.set(fn.name, (fn.parameters?.properties ?? {}) as Record<string, { type?: unknown }>);
  }
  const toolCalls = reply.toolCalls.map((call) => {
    const args = call.argumentsObject;
    const properties = schemas.get(call.name);
    if (properties === undefined || typeof args !== 'object' || args === null) return call;
    const out = Object.fromEntries(
      Object.entries(args).map(([key, value]) => [
        key,
        properties[key] !== undefined && properties[key].type === undefined && typeof value !== 'string'
          ? JSON.stringify(value)
          : value,
      ]),
    );
    return { ...call, argumentsObject: out, argumentsText: JSON.stringify(out) };
  });
  return { ...reply, toolCalls };
}

/**
 * A turn's later calls as the server treats `parallel_tool_calls` (research/local-model-quirks-2.md
 * Q27, Q28): llama-server parses only the first call unless the request says true and its
 * template can do parallel calls (`inputs.parallel_tool_calls = json_value(body,
 * "parallel_tool_calls", false)`; a template whose caps say false turns it off), and the others
 * stay in the content as the model wrote them (llama.cpp #14101: Hermes `<tool_call>` blocks);
 * vLLM drops every call after the first when told false (vllm PR #26233).
 */
export function parallelAsAsked(
  reply: ResolvedReply,
  server: 'llama_cpp' | 'llama_cpp_serial_template' | 'vllm',
  asked: unknown,
): ResolvedReply {
  if (reply.toolCalls.length < 2) return reply;
  const [first, ...rest] = reply.toolCalls;
  if (server === 'vllm') return asked === false ? { ...reply, toolCalls: [first!] } : reply;
  if (server === 'llama_cpp' && asked === true) return reply;
  const written = rest
    .map((call) => `<tool_call>\n{"name": "${call.name}", "arguments": ${call.argumentsText}}\n</tool_call>`)
    .join('\n');
  return { ...reply, content: `${reply.content ?? ''}${written}`, toolCalls: [first!] };
}
