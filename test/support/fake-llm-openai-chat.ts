import { jsonAnswer, randomAlnum, randomDigits } from './fake-llm-models.ts';
import {
  type ChatContext,
  type ResolvedReply,
  contentPieces,
  splitFragments,
  splitText,
} from './fake-llm-reply.ts';
import type { Answer, FakeFlavor, StreamStyle } from './fake-llm-types.ts';

type Delta = Record<string, unknown>;

/** SSE frames of a streamed reply: body (content and tool deltas) and tail (finish, usage, [DONE]). */
export interface StreamFrames {
  body: string[];
  tail: string[];
}

/** The natural stream style of each server. */
export function defaultStyle(flavor: FakeFlavor): StreamStyle {
  return flavor === 'ollama' ? 'ollama' : 'lmstudio_legacy';
}

function completionId(style: StreamStyle): string {
  if (style === 'ollama') return `chatcmpl-${randomDigits(3)}`;
  return `chatcmpl-${randomAlnum(style === 'openai' ? 29 : 26)}`;
}

function toolCallId(style: StreamStyle): string {
  if (style === 'openai') return `call_${randomAlnum(24)}`;
  if (style === 'ollama') return `call_${randomAlnum(8)}`;
  return randomDigits(9);
}

function usageOf(reply: ResolvedReply): Record<string, unknown> {
  const { prompt, completion } = reply.usage;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(reply.reasoningTokens === undefined
      ? {}
      : { completion_tokens_details: { reasoning_tokens: reply.reasoningTokens } }),
  };
}

/** The reasoning deltas that come before the content, in the field the server uses. */
function reasoningDeltas(reply: ResolvedReply, style: StreamStyle): Delta[] {
  if (!reply.reasoning) return [];
  const field = reply.reasoningField ?? (style === 'ollama' ? 'reasoning' : 'reasoning_content');
  return splitText(reply.reasoning).map((piece, i) =>
    i === 0 ? { role: 'assistant', content: '', [field]: piece } : { [field]: piece },
  );
}

function sse(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

/** Renders a reply as an SSE chat.completion.chunk stream in the given style. */
export function openAiStreamFrames(reply: ResolvedReply, style: StreamStyle, ctx: ChatContext): StreamFrames {
  const id = completionId(style);
  const created = Math.floor(Date.now() / 1000);
  const fingerprint =
    style === 'openai' ? `fp_${randomAlnum(10)}` : style === 'ollama' ? 'fp_ollama' : ctx.model;
  const chunk = (delta: Delta, finishReason: string | null): string => {
    const choice =
      style === 'ollama'
        ? { index: 0, delta, finish_reason: finishReason }
        : { index: 0, delta, logprobs: null, finish_reason: finishReason };
    return sse({
      id,
      object: 'chat.completion.chunk',
      created,
      model: ctx.model,
      ...(style === 'openai' ? { service_tier: 'default' } : {}),
      system_fingerprint: fingerprint,
      choices: [choice],
      // OpenAI sends usage:null on every chunk but the last when include_usage is set.
      ...(style === 'openai' && ctx.includeUsage ? { usage: null } : {}),
    });
  };
  const deltas = [
    ...reasoningDeltas(reply, style),
    ...(style === 'openai'
      ? openAiDeltas(reply)
      : style === 'ollama'
        ? ollamaDeltas(reply)
        : lmStudioDeltas(reply)),
  ];
  // Ollama (before v0.32.6) repeats role and empty content in the finish chunk; the others send delta:{}.
  const finishDelta = style === 'ollama' ? { role: 'assistant', content: '' } : {};
  const tail = [chunk(finishDelta, reply.finishReason)];
  if (ctx.includeUsage) {
    tail.push(
      sse({
        id,
        object: 'chat.completion.chunk',
        created,
        model: ctx.model,
        system_fingerprint: fingerprint,
        choices: [],
        usage: usageOf(reply),
      }),
    );
  }
  if (reply.timings !== undefined) {
    // llama-server puts its timings on the last chunk before [DONE].
    const last = tail.length - 1;
    const data = JSON.parse((tail[last] ?? '').slice('data: '.length)) as Record<string, unknown>;
    tail[last] = sse({ ...data, timings: reply.timings });
  }
  tail.push('data: [DONE]\n\n');
  return { body: deltas.map((d) => chunk(d, null)), tail };

  function openAiDeltas(r: ResolvedReply): Delta[] {
    const out: Delta[] = [];
    if (r.content !== undefined || r.toolCalls.length === 0) {
      out.push({ role: 'assistant', content: '', refusal: null });
      for (const piece of contentPieces(r)) out.push({ content: piece });
    }
    r.toolCalls.forEach((call, index) => {
      const at = r.noIndex ? {} : { index: r.sharedIndex ? 0 : index };
      const head = {
        ...at,
        id: call.id ?? toolCallId(style),
        type: 'function',
        function: { name: call.name, arguments: '' },
      };
      const fragments = splitFragments(call.argumentsText);
      // vLLM's speculative decoding: the head and the first fragment in one chunk, same index.
      const first = r.indexTwiceInChunk ? fragments.splice(0, 1) : [];
      const opening = [head, ...first.map((fragment) => ({ ...at, function: { arguments: fragment } }))];
      // A tool-only answer carries the role in its first tool delta, with content null.
      out.push(
        out.length === 0
          ? { role: 'assistant', content: null, tool_calls: opening, refusal: null }
          : { tool_calls: opening },
      );
      for (const fragment of fragments) {
        out.push({ tool_calls: [{ ...at, function: { arguments: fragment } }] });
      }
    });
    return out;
  }

  // LM Studio before 0.3.16: no role on tool chunks (lmstudio-bug-tracker#445), and continuation
  // fragments repeat type and an empty name (#649).
  function lmStudioDeltas(r: ResolvedReply): Delta[] {
    const out: Delta[] = [];
    if (r.content !== undefined || r.toolCalls.length === 0) {
      (r.content ? contentPieces(r) : ['']).forEach((piece, i) => {
        out.push(i === 0 ? { role: 'assistant', content: piece } : { content: piece });
      });
    }
    r.toolCalls.forEach((call, index) => {
      const id = call.id ?? toolCallId(style);
      out.push({
        tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }],
      });
      for (const fragment of splitFragments(call.argumentsText)) {
        out.push({ tool_calls: [{ index, type: 'function', function: { name: '', arguments: fragment } }] });
      }
    });
    return out;
  }

  // Ollama before v0.32.6: every chunk repeats role and content, and all calls come whole in one delta.
  function ollamaDeltas(r: ResolvedReply): Delta[] {
    const out: Delta[] = contentPieces(r).map((piece) => ({ role: 'assistant', content: piece }));
    // Nothing to say still makes one chunk (the native line that carried nothing, or an error line, Q18).
    if (out.length === 0 && r.toolCalls.length === 0) out.push({ role: 'assistant', content: '' });
    if (r.toolCalls.length > 0) {
      out.push({
        role: 'assistant',
        content: '',
        tool_calls: r.toolCalls.map((call, index) => ({
          id: call.id ?? toolCallId(style),
          index,
          type: 'function',
          function: { name: call.name, arguments: call.argumentsText },
        })),
      });
    }
    return out;
  }
}

/** Renders a reply as a non-streaming chat.completion body in the flavor's shape. */
export function openAiReplyBody(reply: ResolvedReply, flavor: FakeFlavor, ctx: ChatContext): Answer {
  const created = Math.floor(Date.now() / 1000);
  const style = defaultStyle(flavor);
  const toolCalls = reply.toolCalls.map((call, index) => ({
    id: call.id ?? toolCallId(style),
    ...(flavor === 'ollama' ? { index } : {}),
    type: 'function',
    function: { name: call.name, arguments: call.argumentsText },
  }));
  if (flavor === 'lm_studio') {
    const message: Record<string, unknown> = { role: 'assistant' };
    if (reply.content !== undefined || toolCalls.length === 0) message.content = reply.content ?? '';
    // tool_calls: [] is always present in LM Studio's answers (lmstudio-bug-tracker#1318).
    message.tool_calls = toolCalls;
    return jsonAnswer(200, {
      id: completionId(style),
      object: 'chat.completion',
      created,
      model: ctx.model,
      choices: [{ index: 0, logprobs: null, finish_reason: reply.finishReason, message }],
      usage: usageOf(reply),
      stats: {},
      system_fingerprint: ctx.model,
    });
  }
  return jsonAnswer(200, {
    id: completionId(style),
    object: 'chat.completion',
    created,
    model: ctx.model,
    system_fingerprint: 'fp_ollama',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.content ?? '',
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: reply.finishReason,
      },
    ],
    usage: usageOf(reply),
  });
}
