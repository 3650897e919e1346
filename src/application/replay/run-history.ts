/**
 * One run's history as its runlog tells it (SPEC §18, STYLE "one history of a run"): the
 * conversation byte for byte as the last request sent it, the model turn answered after it with
 * what became of each of its calls, the last workspace fingerprint, and how the run ended. Resume
 * continues from it; callers never parse runlog lines themselves.
 */
import type { AssistantMessage, ChatMessage, ToolCall, Usage } from '../../domain/messages.ts';
import { ZERO_USAGE, addUsage } from '../../domain/messages.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { fromLogMessage } from '../run/model-turn.ts';

type EventOf<K extends RunEvent['kind']> = Extract<RunEvent, { kind: K }>;

/** One call of the last answered turn, and what the runlog says became of it. */
export interface CallHistory {
  readonly call: ToolCall;
  /** `tool_started`: the call's effect began (a read has none). */
  readonly started?: EventOf<'tool_started'>;
  /** The tool message the model was (or would have been) sent; absent: no answer recorded. */
  readonly answer?: string;
}

/** The model's reply to the last request, when it asked for tools. */
export interface AnsweredTurn {
  /** The assistant message as the loop put it in the conversation. */
  readonly message: AssistantMessage;
  readonly calls: readonly CallHistory[];
}

/** What a runlog holds, read as one run across every process that wrote it. */
export interface RunHistory {
  readonly start: EventOf<'run_start'>;
  /** The conversation as the last request (not a summarising one) sent it. */
  readonly messages: readonly ChatMessage[];
  /** The last request's tool names (read_output among them once it was offered). */
  readonly lastTools: readonly string[];
  /** The reply to the last request, with its calls; absent when none was recorded or it called no tool. */
  readonly turn?: AnsweredTurn;
  /** A request was sent and no reply was recorded: the turn was streaming when the process stopped. */
  readonly unanswered: boolean;
  /** The highest step recorded. */
  readonly steps: number;
  readonly usage: Usage;
  /** The last request's prompt tokens as the server counted them (0: not reported). */
  readonly lastPromptTokens: number;
  /** The last `step_end` that had a fingerprint. */
  readonly fingerprint?: string;
  /** The last `run_end`: the run's outcome. Absent while it runs, or when its process died. */
  readonly end?: EventOf<'run_end'>;
  /** The process that wrote the run last (`run_start`'s, or the last `run_resumed`'s), and since when. */
  readonly owner?: { readonly pid: number; readonly host: string; readonly since: string };
  readonly lastSeq: number;
}

/**
 * The run's outcome: its last `run_end`, unless a `run_resumed` came after it (the run is going
 * again, or its resuming process died). Every reader of a run's status takes it from here.
 */
export function lastOutcome(events: readonly RunEvent[]): EventOf<'run_end'> | undefined {
  let end: EventOf<'run_end'> | undefined;
  for (const event of events) {
    if (event.kind === 'run_end') end = event;
    else if (event.kind === 'run_resumed') end = undefined;
  }
  return end;
}

/** The step limit the run goes (or went) on under: the last `run_resumed`'s, else `run_start`'s. */
export function lastStepLimit(events: readonly RunEvent[], start: EventOf<'run_start'>): number {
  const resumed = events.findLast((event) => event.kind === 'run_resumed');
  return resumed?.kind === 'run_resumed' ? resumed.max_steps : start.max_steps;
}

/**
 * Rebuilds a run from its events. Each request logs the messages added since the one before it,
 * from the first one that changed (a compaction rewrites the middle): the conversation is the
 * previous one cut to `messages - new_messages` and the new ones added. A summarising request
 * (asked with no tools) is a side conversation: its summary comes back in the next request.
 * `passReasoningBack`: the model's profile sends reasoning back with its turns.
 */
export function runHistory(events: readonly RunEvent[], passReasoningBack: boolean): RunHistory {
  const start = events.find((event): event is EventOf<'run_start'> => event.kind === 'run_start');
  if (start === undefined) throw new Error('a runlog without run_start has no history');
  let messages: ChatMessage[] = [];
  let lastTools: readonly string[] = [];
  let reply: EventOf<'llm_response'> | undefined;
  let recovered: EventOf<'tool_call_recovered'> | undefined;
  let sideTurn = false;
  let requested = false;
  const started = new Map<string, EventOf<'tool_started'>>();
  const answers = new Map<string, string>();
  let steps = 0;
  let usage = ZERO_USAGE;
  let lastPromptTokens = 0;
  let fingerprint: string | undefined;
  let owner: RunHistory['owner'];
  for (const event of events) {
    if ('step' in event && typeof event.step === 'number') steps = Math.max(steps, event.step);
    switch (event.kind) {
      case 'llm_request': {
        sideTurn = event.tools.length === 0;
        if (sideTurn) break;
        const kept = event.messages - event.new_messages.length;
        messages = [...messages.slice(0, kept), ...event.new_messages.map(fromLogMessage)];
        lastTools = event.tools;
        requested = true;
        reply = undefined;
        recovered = undefined;
        started.clear();
        answers.clear();
        break;
      }
      case 'llm_response':
        usage = addUsage(usage, usageOf(event));
        if (sideTurn) {
          sideTurn = false;
          break;
        }
        reply = event;
        requested = false;
        lastPromptTokens = event.usage.prompt_tokens;
        break;
      case 'tool_call_recovered':
        recovered = event;
        break;
      case 'tool_started':
        started.set(event.call_id, event);
        break;
      case 'tool_result':
        answers.set(event.call_id, event.result);
        break;
      case 'tool_error':
        answers.set(event.call_id, `Error: ${event.error}`);
        break;
      case 'finish_rejected':
        answers.set(event.call_id, `finish_task was not accepted: ${event.message}`);
        break;
      case 'step_end':
        if (event.fingerprint !== undefined) fingerprint = event.fingerprint;
        break;
      case 'run_start':
      case 'run_resumed':
        owner =
          event.pid === undefined || event.host === undefined
            ? undefined
            : { pid: event.pid, host: event.host, since: event.ts };
        break;
      default:
        break;
    }
  }
  const end = lastOutcome(events);
  const turn =
    reply === undefined ? undefined : answeredTurn(reply, recovered, passReasoningBack, started, answers);
  return {
    start,
    messages,
    lastTools,
    ...(turn === undefined ? {} : { turn }),
    unanswered: requested,
    steps,
    usage,
    lastPromptTokens,
    ...(fingerprint === undefined ? {} : { fingerprint }),
    ...(end === undefined ? {} : { end }),
    ...(owner === undefined ? {} : { owner }),
    lastSeq: events.at(-1)?.seq ?? 0,
  };
}

/** The assistant message step.ts put in the conversation for this reply, and its calls' fates. */
function answeredTurn(
  reply: EventOf<'llm_response'>,
  recovered: EventOf<'tool_call_recovered'> | undefined,
  passReasoningBack: boolean,
  started: ReadonlyMap<string, EventOf<'tool_started'>>,
  answers: ReadonlyMap<string, string>,
): AnsweredTurn | undefined {
  // Calls written as text and recovered replace the text (step.ts): the content goes empty.
  const calls = reply.tool_calls.length > 0 ? reply.tool_calls : (recovered?.tool_calls ?? []);
  if (calls.length === 0) return undefined;
  const reasoning = reply.reasoning ?? '';
  const message: AssistantMessage = {
    role: 'assistant',
    content: reply.tool_calls.length > 0 ? reply.content : '',
    toolCalls: calls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments })),
    ...(passReasoningBack && reasoning.trim() !== '' ? { reasoning } : {}),
  };
  return {
    message,
    calls: message.toolCalls.map((call) => {
      const start = started.get(call.id);
      const answer = answers.get(call.id);
      return {
        call,
        ...(start === undefined ? {} : { started: start }),
        ...(answer === undefined ? {} : { answer }),
      };
    }),
  };
}

function usageOf(event: EventOf<'llm_response'>): Usage {
  return {
    promptTokens: event.usage.prompt_tokens,
    completionTokens: event.usage.completion_tokens,
    totalTokens: event.usage.total_tokens,
  };
}
