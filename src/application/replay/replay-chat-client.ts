import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import {
  backendKindOf,
  type BackendKind,
  type ChatClient,
  type ChatRequest,
  type ChatStreamEvent,
  type ChatTurn,
} from '../ports.ts';

type RecordedTurn = Extract<RunEvent, { kind: 'llm_response' }>;

/**
 * A `ChatClient` that answers from a recorded run: each request gets the next `llm_response`
 * (content, tool calls, finish reason, usage), so `executeTask` re-runs the original
 * conversation while the tools run for real. `llm_retry` lines are not turns: a retried
 * request still produced one `llm_response`. It never looks at the request: a re-run that
 * drifts shows up in the tool results, which is what a replay compares.
 */
export class ReplayChatClient implements ChatClient {
  readonly backend: BackendKind;
  readonly #turns: readonly RecordedTurn[];
  readonly #runId: string;
  #next = 0;

  constructor(events: readonly RunEvent[]) {
    this.#turns = events.filter((event): event is RecordedTurn => event.kind === 'llm_response');
    const start = events.find((event) => event.kind === 'run_start');
    this.#runId = events[0]?.run_id ?? '(unknown run)';
    // Only informative: nothing is sent anywhere.
    this.backend = backendKindOf(start?.backend) ?? 'lm_studio';
  }

  /** How many model turns the run recorded. */
  get recorded(): number {
    return this.#turns.length;
  }

  /** How many of them the re-run has asked for so far. */
  get used(): number {
    return this.#next;
  }

  async complete(request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn> {
    request.signal.throwIfAborted();
    const recorded = this.#turns[this.#next];
    if (recorded === undefined) {
      throw new FabricError(
        'backend_error',
        `The replay diverged: the re-run asked for model turn ${this.#next + 1}, but run ${this.#runId} ` +
          `recorded only ${this.#turns.length}. The tools answered differently, so the recorded turns no longer fit.`,
        { details: { replay: 'turns_exhausted', recorded: this.#turns.length } },
      );
    }
    this.#next += 1;
    if (recorded.reasoning) onEvent?.({ type: 'reasoning', text: recorded.reasoning });
    if (recorded.content !== '') onEvent?.({ type: 'text', text: recorded.content });
    for (const call of recorded.tool_calls) onEvent?.({ type: 'tool_call_started', name: call.name });
    return {
      content: recorded.content,
      // A turn that only reasoned replays as one: the loop treats it the same way again.
      ...(recorded.reasoning === undefined ? {} : { reasoning: recorded.reasoning }),
      ...(recorded.reasoning_tokens === undefined ? {} : { reasoningTokens: recorded.reasoning_tokens }),
      toolCalls: recorded.tool_calls.map((call) => ({
        id: call.id,
        name: call.name,
        arguments: call.arguments,
      })),
      finishReason: recorded.finish_reason,
      usage: {
        promptTokens: recorded.usage.prompt_tokens,
        completionTokens: recorded.usage.completion_tokens,
        totalTokens: recorded.usage.total_tokens,
      },
      latencyMs: 0,
      attempts: 1,
      backend: `replay of ${recorded.backend}`,
    };
  }
}
