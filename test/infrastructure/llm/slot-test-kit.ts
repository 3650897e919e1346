import type { ChatRequest } from '../../../src/application/ports.ts';
import type { FakeLlmServer, ScriptedTurn } from '../../support/fake-llm-server.ts';
import { ask } from './llm-test-kit.ts';

/** A run's tool call, and its last turn: "finish" in a task ends the run. */
export const READ: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'a.rs' } }] },
};
export const DONE: ScriptedTurn = { reply: { content: 'done' } };

/** Answers READ, or DONE when the task says "finish" (a fake's `respond`). */
export function readUntilFinish({ messages }: { messages: readonly { content: string }[] }): ScriptedTurn {
  return messages.some((m) => m.content.includes('finish')) ? DONE : READ;
}

/**
 * The turn with a prefill of `tokensPerSecond` reported as llama-server reports it, in `timings`
 * (prompt_n tokens in prompt_ms): the server's own figure, not this machine's clock.
 */
export function reportingPrefill(turn: ScriptedTurn, tokensPerSecond: number): ScriptedTurn {
  const timings = { cache_n: 0, prompt_n: 1000, prompt_ms: (1000 / tokensPerSecond) * 1000 };
  return 'reply' in turn ? { reply: { ...turn.reply, timings } } : turn;
}

/** A request of run `run`; `padding` characters make its prompt long (a cold prefill of it, slow). */
export function runRequest(
  model: string,
  run: string,
  task: string,
  padding = 0,
  signal?: AbortSignal,
): ChatRequest {
  return { ...ask(model, `${run}: ${task} ${'x'.repeat(padding)}`, signal), affinity: run };
}

/** Which run sent each request the server received, in order. */
export function servedRuns(server: FakeLlmServer): string[] {
  return server.chatRequests().map((r) => {
    const messages = (r.body as { messages: { content: string }[] }).messages;
    return messages[0]!.content.split(':')[0]!;
  });
}

/** A tool that takes a moment: long against a hold timed from a fast answer, short against a reported one. */
export function toolRuns(ms = 300): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
