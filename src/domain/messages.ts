/** A JSON Schema object as sent in the OpenAI `tools` parameter. */
export type JsonSchema = { readonly [key: string]: unknown };

/** A tool as offered to the model. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

/** A tool call as the model asked for it. `arguments` is the raw JSON text, unparsed. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export interface SystemMessage {
  readonly role: 'system';
  readonly content: string;
}
export interface UserMessage {
  readonly role: 'user';
  readonly content: string;
}
export interface AssistantMessage {
  readonly role: 'assistant';
  readonly content: string;
  readonly toolCalls: readonly ToolCall[];
  /** Sent back only when the model's profile asks for it (SPEC §16); never as content. */
  readonly reasoning?: string;
}
export interface ToolMessage {
  readonly role: 'tool';
  readonly toolCallId: string;
  readonly name: string;
  readonly content: string;
}

export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** Token counts for one model call, from whichever field the backend filled. */
export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** Prompt tokens the server's prompt cache served, when it says (llama-server `timings.cache_n`). */
  readonly cachedTokens?: number | undefined;
  /**
   * The prompt tokens the server evaluated and the ms it says that took, when it says
   * (llama-server `timings.prompt_n` / `prompt_ms`): its prefill speed, free of the network and
   * of this machine's load.
   */
  readonly prefill?: { readonly tokens: number; readonly ms: number } | undefined;
}

export const ZERO_USAGE: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/** Adds two usage records. */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}
