import type { FakeModel, ScriptedTurn } from './fake-llm-types.ts';

/**
 * Models that behave rather than follow a script (issue 33): each answers any request from the
 * request itself, so a probe suite is tested against behaviours, not replies written for it.
 *
 * - `native`: calls a tool through the server's native field, the call built from the offered schemas;
 * - `dialect`: the same call, written as text in `dialect` (SPEC §16; the server's parser failed);
 * - `no_calls`: never calls a tool, whatever it is offered (answers in prose);
 * - `thinks_forever`: streams reasoning, then nothing, the connection held (ollama #12606);
 * - `never_answers`: accepts the request and sends no byte.
 *
 * A slow model is any of these with `slowMs`; a small window is `enforceWindow` (a number smaller than
 * the window the catalog reports: LM Studio's silent auto-fit).
 */
export type FakeBehaviour = 'native' | 'dialect' | 'no_calls' | 'thinks_forever' | 'never_answers';

/** The text dialects a `dialect` model writes its calls in (shapes from research/local-model-quirks.md). */
export type FakeDialect = 'hermes' | 'mistral' | 'lmstudio_tool_request';

interface OfferedTool {
  name: string;
  properties: Record<string, { type?: unknown; enum?: unknown }>;
}

interface WireMessage {
  role?: unknown;
  content?: unknown;
}

/**
 * The turn a behaving model gives this request. The tool it calls is the one its last user
 * message names first (else the first offered); each argument comes from the last tool result's field of
 * the same name, else the user's quoted text (strings) or number (numbers), else a plain default.
 * A user message that says "do not use tools", or a request without tools, gets prose.
 */
export function behave(model: FakeModel, body: object): ScriptedTurn {
  const behaviour = model.behaviour ?? 'native';
  const delay = model.slowMs === undefined ? {} : { delayMs: model.slowMs };
  if (behaviour === 'never_answers') return { hang: true };
  const request = body as {
    messages?: unknown;
    tools?: unknown;
    think?: unknown;
    reasoning_effort?: unknown;
  };
  const thinks = model.thinking === true && !thinkingOff(request);
  const reasoning = thinks ? { reasoning: 'The user wants an answer; I will give the shortest one.' } : {};
  if (behaviour === 'thinks_forever') {
    return { reply: { reasoning: 'Let me consider this carefully. '.repeat(8) }, endless: true };
  }
  const messages = Array.isArray(request.messages) ? (request.messages as WireMessage[]) : [];
  const user = [...messages].reverse().find((m) => m.role === 'user');
  const userText = textOf(user?.content);
  const tools = offeredTools(request.tools);
  if (behaviour === 'no_calls' || tools.length === 0 || /do not use (any )?tools?/i.test(userText)) {
    const content =
      behaviour === 'no_calls' && tools.length > 0 && !/do not use/i.test(userText)
        ? 'I would call a tool here, but I answer in prose: the time is probably around noon.'
        : 'Hello! How can I help?';
    return { reply: { content, ...reasoning }, ...delay };
  }
  const named = tools
    .filter((t) => userText.includes(t.name))
    .sort((a, b) => userText.indexOf(a.name) - userText.indexOf(b.name));
  const tool = named[0] ?? (tools[0] as OfferedTool);
  const lastResult = [...messages].reverse().find((m) => m.role === 'tool');
  const args = argumentsFor(tool, userText, resultFields(lastResult?.content));
  if (behaviour === 'dialect') {
    return {
      reply: { content: written(model.dialect ?? 'hermes', tool.name, args), ...reasoning },
      ...delay,
    };
  }
  return { reply: { toolCalls: [{ name: tool.name, arguments: args }], ...reasoning }, ...delay };
}

/** `think: false` (Ollama native) or `reasoning_effort: "none"` (OpenAI-compatible) turns thinking off. */
function thinkingOff(request: { think?: unknown; reasoning_effort?: unknown }): boolean {
  return request.think === false || request.reasoning_effort === 'none';
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : ''))
      .join('');
  return '';
}

function offeredTools(tools: unknown): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool: { function?: { name?: unknown; parameters?: { properties?: unknown } } }) => {
    const name = tool?.function?.name;
    if (typeof name !== 'string') return [];
    const properties = tool.function?.parameters?.properties;
    return [
      {
        name,
        properties:
          typeof properties === 'object' && properties !== null
            ? (properties as OfferedTool['properties'])
            : {},
      },
    ];
  });
}

/** A tool result's fields, when it is a JSON object. */
function resultFields(content: unknown): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(textOf(content));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function argumentsFor(
  tool: OfferedTool,
  userText: string,
  fromResult: Record<string, unknown>,
): Record<string, unknown> {
  const quoted = /["'“]([^"'”]+)["'”]/.exec(userText)?.[1];
  const number = /\b(\d+)\b/.exec(userText)?.[1];
  const args: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(tool.properties)) {
    if (name in fromResult) args[name] = fromResult[name];
    else if (Array.isArray(schema.enum) && schema.enum.length > 0) args[name] = schema.enum[0];
    else if (schema.type === 'integer' || schema.type === 'number') args[name] = Number(number ?? 1);
    else if (schema.type === 'boolean') args[name] = true;
    else if (schema.type === 'array') args[name] = [];
    else if (schema.type === 'object') args[name] = {};
    else args[name] = quoted ?? 'x';
  }
  return args;
}

function written(dialect: FakeDialect, name: string, args: Record<string, unknown>): string {
  const call = JSON.stringify({ name, arguments: args });
  if (dialect === 'mistral') return `[TOOL_CALLS][${call}]`;
  if (dialect === 'lmstudio_tool_request') return `[TOOL_REQUEST]${call}[END_TOOL_REQUEST]`;
  return `I will call the tool.\n<tool_call>\n${call}\n</tool_call>`;
}
