import type { ToolCall } from '../../domain/messages.ts';
import { nineAlnumId } from '../../domain/tool-call-ids.ts';
import { ThinkSplitter } from './think-splitter.ts';

/** The parts of an OpenAI-style stream chunk the assembler reads. Every field may be missing. */
export interface ChunkLike {
  readonly choices?: ReadonlyArray<{
    readonly delta?: {
      readonly content?: string | null;
      /** LM Studio (DeepSeek-style setting, lmstudio-bug-tracker #378). */
      readonly reasoning_content?: string | null;
      /** LM Studio 0.3.23+ (gpt-oss and newer), Ollama's `/v1`. */
      readonly reasoning?: string | null;
      readonly tool_calls?: ReadonlyArray<{
        readonly index?: number;
        readonly id?: string | null;
        readonly function?: { readonly name?: string | null; readonly arguments?: string | null } | null;
      }> | null;
    } | null;
    readonly finish_reason?: string | null;
  }> | null;
  readonly usage?: {
    readonly prompt_tokens?: number;
    readonly completion_tokens?: number;
    readonly total_tokens?: number;
    readonly completion_tokens_details?: { readonly reasoning_tokens?: number } | null;
    readonly prompt_tokens_details?: { readonly cached_tokens?: number } | null;
  } | null;
  /**
   * llama-server's own counts, on its last chunk: `cache_n` prompt tokens reused, `prompt_n`
   * evaluated in `prompt_ms` milliseconds.
   */
  readonly timings?: {
    readonly cache_n?: number;
    readonly prompt_n?: number;
    readonly prompt_ms?: number;
  } | null;
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Assembles a streamed assistant turn. Handles argument fragments (OpenAI, LM Studio), whole calls
 * in one delta (Ollama), an empty `name` repeated in later fragments (older LM Studio), missing
 * `index` (old Ollama) and empty ids (LM Studio), per SPEC §5 and the protocol notes.
 */
export class StreamAssembler {
  /** The content with `<think>` blocks taken out; the reasoning from every field that carries it. */
  readonly #think = new ThinkSplitter();
  #reasoningTokens: number | undefined;
  readonly #calls: PartialCall[] = [];
  readonly #byIndex = new Map<number, PartialCall>();
  #finishReason: string | null = null;
  #usage: { prompt: number; completion: number; total: number } | null = null;
  #cached: number | undefined;
  #prefill: { tokens: number; ms: number } | undefined;
  readonly #newId: () => string;

  constructor(newId: () => string = () => nineAlnumId()) {
    this.#newId = newId;
  }

  /** Adds a chunk; returns the text and reasoning it carried and the names of calls it started. */
  push(chunk: ChunkLike): { text: string; reasoning: string; startedCalls: string[] } {
    let text = '';
    let reasoning = '';
    const startedCalls: string[] = [];
    if (chunk.usage) {
      const prompt = chunk.usage.prompt_tokens ?? 0;
      const completion = chunk.usage.completion_tokens ?? 0;
      this.#usage = { prompt, completion, total: chunk.usage.total_tokens ?? prompt + completion };
      const thought = chunk.usage.completion_tokens_details?.reasoning_tokens;
      if (typeof thought === 'number') this.#reasoningTokens = thought;
      const cached = chunk.usage.prompt_tokens_details?.cached_tokens;
      if (typeof cached === 'number') this.#cached = cached;
    }
    // llama-server says what its prompt cache served in `timings` (cache_n), not in usage.
    if (typeof chunk.timings?.cache_n === 'number') this.#cached = chunk.timings.cache_n;
    const { prompt_n: evaluated, prompt_ms: ms } = chunk.timings ?? {};
    if (typeof evaluated === 'number' && typeof ms === 'number' && ms >= 0)
      this.#prefill = { tokens: evaluated, ms };
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta;
      const field = delta?.reasoning_content || delta?.reasoning;
      if (field) {
        this.#think.addField(field);
        reasoning += field;
      }
      if (delta?.content) {
        const split = this.#think.push(delta.content);
        text += split.content;
        reasoning += split.reasoning;
      }
      for (const fragment of delta?.tool_calls ?? []) {
        const name = fragment.function?.name ?? '';
        const call = this.#callFor(fragment.index, fragment.id ?? '', name);
        // Older LM Studio repeats `name: ""` in every later fragment: never let it erase the name.
        if (name !== '' && call.name === '') {
          call.name = name;
          startedCalls.push(name);
        }
        if (fragment.id && call.id === '') call.id = fragment.id;
        call.arguments += fragment.function?.arguments ?? '';
      }
      if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    }
    return { text, reasoning, startedCalls };
  }

  #callFor(index: number | undefined, id: string, name: string): PartialCall {
    // Without an index, a fragment continues the last call unless it starts another: a new id,
    // or a name when the last call has one (research/local-model-quirks-2.md Q29: servers that
    // omit `index` would otherwise give `get_weatherget_time`).
    const last = this.#calls.at(-1);
    const existing =
      index === undefined
        ? last !== undefined && !(name !== '' && last.name !== '')
          ? last
          : undefined
        : this.#byIndex.get(index);
    // A different non-empty id at the same index is a new call (servers that reuse index 0).
    if (existing && !(id !== '' && existing.id !== '' && id !== existing.id)) return existing;
    const call: PartialCall = { id: '', name: '', arguments: '' };
    this.#calls.push(call);
    if (index !== undefined) this.#byIndex.set(index, call);
    return call;
  }

  /** True once some chunk carried a `finish_reason`: a stream without one was cut short. */
  get finished(): boolean {
    return this.#finishReason !== null;
  }

  result(): {
    content: string;
    /** Present when the model reasoned, from a reasoning field or `<think>` in the content. */
    reasoning?: string;
    reasoningTokens?: number;
    toolCalls: ToolCall[];
    finishReason: string | null;
    usage: { prompt: number; completion: number; total: number } | null;
    /** Prompt tokens the server's cache served (llama-server `timings.cache_n`, OpenAI `cached_tokens`). */
    cachedTokens: number | undefined;
    /** The prompt tokens the server evaluated and its ms for them (llama-server `timings`). */
    prefill: { tokens: number; ms: number } | undefined;
  } {
    const { content, reasoning } = this.#think.finish();
    const toolCalls = this.#calls
      .filter((call) => call.name !== '')
      .map((call) => ({
        id: call.id === '' ? this.#newId() : call.id,
        name: call.name,
        arguments: call.arguments,
      }));
    return {
      content,
      ...(reasoning === undefined ? {} : { reasoning }),
      ...(this.#reasoningTokens === undefined ? {} : { reasoningTokens: this.#reasoningTokens }),
      toolCalls,
      finishReason: this.#finishReason,
      usage: this.#usage,
      cachedTokens: this.#cached,
      prefill: this.#prefill,
    };
  }
}
