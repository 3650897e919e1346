import type { ChatMessage, ToolSpec } from '../../../domain/messages.ts';
import { simpleToolSchema } from '../../../domain/tool-schema.ts';
import { asRecord, numberField, stringField } from '../http-json.ts';

/**
 * Domain messages in the shape of Ollama's native `/api/chat`. Tool-call `arguments` go back as
 * OBJECTS: a string is a 400 there (aliasrobotics/cai#76, ollama#12794); a malformed call is sent
 * as `{}` (the tool result already told the model). Tool results name their tool (`tool_name`).
 */
export function toOllamaMessages(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  return messages.map(toOllamaMessage);
}

function toOllamaMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      return message.toolCalls.length === 0
        ? { role: 'assistant', content: message.content, ...thinkingOf(message) }
        : {
            role: 'assistant',
            content: message.content,
            ...thinkingOf(message),
            tool_calls: message.toolCalls.map((call) => ({
              id: call.id,
              function: { name: call.name, arguments: argumentsObject(call.arguments) },
            })),
          };
    case 'tool':
      return {
        role: 'tool',
        content: message.content,
        tool_name: message.name,
        tool_call_id: message.toolCallId,
      };
  }
}

function argumentsObject(text: string): Record<string, unknown> {
  try {
    return asRecord(JSON.parse(text)) ?? {};
  } catch {
    return {};
  }
}

/** Tool specs in the `tools` shape `/api/chat` takes (the OpenAI one). */
export function toOllamaTools(tools: readonly ToolSpec[]): Record<string, unknown>[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: simpleToolSchema(tool.parameters, { wire: true }),
    },
  }));
}

/** What one NDJSON line of a native stream carries. */
export interface OllamaLine {
  readonly error: string | undefined;
  readonly content: string;
  readonly thinking: string;
  readonly toolCalls: readonly {
    readonly id: string | undefined;
    readonly name: string;
    readonly arguments: string;
  }[];
  readonly done: boolean;
  readonly doneReason: string | undefined;
  readonly promptEvalCount: number | undefined;
  readonly evalCount: number | undefined;
}

/** Parses one NDJSON line; whole tool calls arrive in one line, `arguments` as an object. */
export function parseOllamaLine(text: string): OllamaLine {
  const record = asRecord(JSON.parse(text));
  const error = record?.error;
  const message = asRecord(record?.message);
  const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
  return {
    error: error === undefined ? undefined : typeof error === 'string' ? error : JSON.stringify(error),
    content: stringField(message, 'content') ?? '',
    // `think` requests stream the reasoning in `message.thinking` (api.md, Ollama 0.9+).
    thinking: stringField(message, 'thinking') ?? '',
    toolCalls: calls.flatMap((raw) => {
      const call = asRecord(raw);
      const fn = asRecord(call?.function);
      const name = stringField(fn, 'name');
      if (name === undefined || name === '') return [];
      const args = fn?.arguments;
      // Some models emit stringified arguments (ollama PR #12413); pass them through as text.
      const text = typeof args === 'string' ? args : JSON.stringify(args ?? {});
      return [{ id: stringField(call, 'id'), name, arguments: text }];
    }),
    done: record?.done === true,
    doneReason: stringField(record, 'done_reason'),
    promptEvalCount: numberField(record, 'prompt_eval_count'),
    evalCount: numberField(record, 'eval_count'),
  };
}

/** An assistant turn's reasoning, sent back in `thinking` only when the profile asked (SPEC §16). */
function thinkingOf(message: { readonly reasoning?: string }): { thinking?: string } {
  return message.reasoning === undefined ? {} : { thinking: message.reasoning };
}
