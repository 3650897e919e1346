import { jsonAnswer, randomAlnum } from './fake-llm-models.ts';
import { type ChatContext, type ResolvedReply, contentPieces, splitText } from './fake-llm-reply.ts';
import type { Answer } from './fake-llm-types.ts';
import type { StreamFrames } from './fake-llm-openai-chat.ts';

/**
 * The Go unmarshal errors Ollama's /api/chat gives for wire shapes its structs reject: string tool-call
 * arguments (aliasrobotics/cai#76, ollama#12794) and array content (BerriAI/litellm#11273).
 */
export function ollamaNativeShapeError(body: unknown): Answer | undefined {
  const messages =
    typeof body === 'object' && body !== null ? (body as { messages?: unknown }).messages : undefined;
  if (!Array.isArray(messages)) return undefined;
  for (const message of messages as unknown[]) {
    if (typeof message !== 'object' || message === null) continue;
    const { content, tool_calls: toolCalls } = message as { content?: unknown; tool_calls?: unknown };
    if (Array.isArray(content)) {
      return jsonAnswer(400, {
        error:
          'json: cannot unmarshal array into Go struct field ChatRequest.messages.content of type string',
      });
    }
    if (!Array.isArray(toolCalls)) continue;
    for (const call of toolCalls as unknown[]) {
      const args = (call as { function?: { arguments?: unknown } } | null)?.function?.arguments;
      if (typeof args === 'string') {
        return jsonAnswer(400, {
          error:
            'json: cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments',
        });
      }
    }
  }
  return undefined;
}

// The native API has no 'tool_calls' reason: the OpenAI layer derives it from done_reason 'stop' plus calls.
function doneReason(reply: ResolvedReply): string {
  return reply.finishReason === 'tool_calls' ? 'stop' : reply.finishReason;
}

function toolCalls(reply: ResolvedReply): Record<string, unknown>[] {
  return reply.toolCalls.map((call, index) => ({
    id: call.id ?? `call_${randomAlnum(8)}`,
    function: { index, name: call.name, arguments: call.argumentsObject },
  }));
}

/** The statistics of a final native object; durations are nanoseconds. */
function finalStats(reply: ResolvedReply): Record<string, unknown> {
  return {
    done_reason: doneReason(reply),
    done: true,
    total_duration: 182_242_375,
    load_duration: 41_295_167,
    prompt_eval_count: reply.usage.prompt,
    prompt_eval_duration: 24_573_166,
    eval_count: reply.usage.completion,
    eval_duration: 115_959_084,
  };
}

/** Renders a reply as Ollama's NDJSON stream: content pieces, all calls in one object, then done:true. */
export function ollamaNativeStream(reply: ResolvedReply, ctx: ChatContext): StreamFrames {
  const line = (value: unknown): string => `${JSON.stringify(value)}\n`;
  const base = (): Record<string, unknown> => ({ model: ctx.model, created_at: new Date().toISOString() });
  // With `think`, the reasoning streams first in `message.thinking` (api.md), the content after.
  const body = [
    ...(reply.reasoning ? splitText(reply.reasoning) : []).map((piece) =>
      line({ ...base(), message: { role: 'assistant', content: '', thinking: piece }, done: false }),
    ),
    ...contentPieces(reply).map((piece) =>
      line({ ...base(), message: { role: 'assistant', content: piece }, done: false }),
    ),
  ];
  if (reply.toolCalls.length > 0) {
    body.push(
      line({
        ...base(),
        message: { role: 'assistant', content: '', tool_calls: toolCalls(reply) },
        done: false,
      }),
    );
  }
  return {
    body,
    tail: [line({ ...base(), message: { role: 'assistant', content: '' }, ...finalStats(reply) })],
  };
}

/** Renders a reply as Ollama's single non-streaming object. */
export function ollamaNativeBody(reply: ResolvedReply, ctx: ChatContext): Answer {
  const message: Record<string, unknown> = { role: 'assistant', content: reply.content ?? '' };
  if (reply.reasoning) message.thinking = reply.reasoning;
  if (reply.toolCalls.length > 0) message.tool_calls = toolCalls(reply);
  return jsonAnswer(200, {
    model: ctx.model,
    created_at: new Date().toISOString(),
    message,
    ...finalStats(reply),
  });
}
