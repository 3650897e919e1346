/**
 * Before each request, keeps the conversation inside the window (SPEC §17): past ~80% the oldest
 * tool results become stubs (compaction.ts); if stubs cannot bring it back down, one summarising
 * turn, asked with no tools, replaces the middle of the conversation by the model's own summary.
 * Each is a `compaction` event with the tokens before and after; replay reproduces both, as the
 * summary is an ordinary recorded model turn.
 */
import { FabricError } from '../../domain/errors.ts';
import type { ChatMessage, ToolSpec, Usage } from '../../domain/messages.ts';
import type { ChatClient, TurnSettings } from '../ports.ts';
import { COMPACT_AT, compactIfNeeded, estimateTokens, lastTurnStart, occupancy } from './compaction.ts';
import { type Conversation, requestModelTurn } from './model-turn.ts';
import { CHARS_PER_TOKEN } from './output-budget.ts';
import type { RunRecorder } from './run-recorder.ts';

/** After stubbing, a conversation still above this share of the window is summarised... */
const SUMMARISE_AT = 0.6;
/**
 * ...when what a summary would replace is at least this share of the window: a summary costs a
 * model turn, so it is not asked for a middle it cannot shrink by much (in a window the fixed
 * prompt nearly fills, it would be asked every step).
 */
const SUMMARY_WORTH = 0.1;

/** What the model is asked for, with no tools offered. */
export const SUMMARY_REQUEST =
  'Your conversation no longer fits your context window, so its middle will be replaced by a summary ' +
  'you write now. Summarise the work so far, for yourself to continue from: what the task needs, ' +
  'what you did (files read and changed, commands run and what they showed), what you learnt, and ' +
  'what is left to do. Answer in plain text; do not call tools.';

/** Said after the summary when the kept turns start with the model's own turn. */
const CONTINUE = 'Continue the task from your summary.';

/** The last request as the server counted it, and how many messages it held. */
export interface LastCount {
  readonly promptTokens: number;
  readonly sentCount: number;
}

export interface KeepInWindowInput {
  readonly window: number;
  readonly replyRoom: number;
  readonly recorder: RunRecorder;
  readonly conversation: Conversation;
  readonly specs: readonly ToolSpec[];
  readonly step: number;
  readonly last: LastCount | undefined;
  /** Asks the summarising turn. */
  readonly chat: ChatClient;
  readonly model: string;
  readonly runId: string;
  readonly settings?: TurnSettings;
  readonly signal: AbortSignal;
  addUsage(usage: Usage): void;
}

/**
 * Compacts the conversation when the next request would pass ~80% of the window; returns the count
 * the next occupancy starts from (changed when the conversation was), or `last` unchanged.
 */
export async function keepInWindow(input: KeepInWindowInput): Promise<LastCount | undefined> {
  const { window, replyRoom, conversation } = input;
  // The tools are serialised only when there is no server count to start from.
  const toolsChars = () => JSON.stringify(input.specs).length;
  const tokens = occupancy(conversation, input.last, toolsChars);
  if (tokens + replyRoom <= window * COMPACT_AT) return input.last;
  const stubs = compactIfNeeded(conversation, tokens, window, replyRoom);
  let after = stubs?.tokensAfter ?? tokens;
  let firstChanged = stubs?.firstChanged ?? conversation.messages.length;
  let summarised = 0;
  if (after + replyRoom > window * SUMMARISE_AT) {
    const summary = await summarise(input);
    if (summary !== null) {
      summarised = summary.replaced;
      firstChanged = Math.min(firstChanged, 2);
      after = estimateTokens(conversation.messages) + Math.ceil(toolsChars() / CHARS_PER_TOKEN);
    }
  }
  if (stubs === null && summarised === 0) return input.last;
  await input.recorder.record({
    kind: 'compaction',
    step: input.step,
    window_tokens: window,
    tokens_before: tokens,
    tokens_after: Math.max(0, Math.round(after)),
    stubbed: stubs?.stubbed ?? 0,
    ...(summarised === 0 ? {} : { summarised }),
  });
  // The request logs the conversation from the first message that changed, and the next
  // occupancy starts from the estimate, not from a count of what is gone.
  conversation.sentCount = Math.min(conversation.sentCount, firstChanged);
  return { promptTokens: Math.round(after), sentCount: conversation.messages.length };
}

/**
 * Where the kept last turn starts: a turn of the model's (or a user message), never a tool
 * result, which must follow the call it answers. Null when there is no middle to summarise.
 */
export function summaryCut(messages: readonly ChatMessage[]): number | null {
  let cut = lastTurnStart(messages);
  while (cut > 2 && messages[cut]?.role === 'tool') cut -= 1;
  // At least two messages between the task and the kept turns, or nothing is gained.
  return cut >= 4 ? cut : null;
}

/**
 * Asks the model, with no tools, to summarise everything between the task and the last turns, and
 * puts its summary (as its own turn) in their place. A summary the model could not give (an empty
 * answer, a request that itself overflowed) is replaced by a list of the calls that were made, so
 * the run goes on. The number of messages replaced, or null when there was no middle.
 */
async function summarise(input: KeepInWindowInput): Promise<{ replaced: number } | null> {
  const { conversation } = input;
  const messages = conversation.messages;
  const cut = summaryCut(messages);
  if (cut === null) return null;
  const middle = messages.slice(2, cut);
  if (estimateTokens(middle) < input.window * SUMMARY_WORTH) return null;
  const request: Conversation = {
    messages: [...messages.slice(0, cut), { role: 'user', content: SUMMARY_REQUEST }],
    sentCount: Math.min(conversation.sentCount, cut),
  };
  let text = '';
  try {
    const turn = await requestModelTurn({
      chat: input.chat,
      model: input.model,
      recorder: input.recorder,
      conversation: request,
      tools: [],
      step: input.step,
      finalTurn: false,
      signal: input.signal,
      ...(input.settings === undefined ? {} : { settings: input.settings }),
      affinity: input.runId,
    });
    input.addUsage(turn.usage);
    text = turn.content.trim();
  } catch (error) {
    // A summary request that does not fit either: the list of calls stands in for it.
    if (!(error instanceof FabricError && error.code === 'context_overflow')) throw error;
  }
  const summary = text !== '' ? text : callList(middle);
  const next = messages[cut];
  const replacement: ChatMessage[] = [
    {
      role: 'assistant',
      content: `Summary of the work so far (earlier turns removed to fit the window):\n${summary}`,
      toolCalls: [],
    },
    // Roles alternate: a kept turn of the model's own follows a user message.
    ...(next?.role === 'assistant' ? [{ role: 'user' as const, content: CONTINUE }] : []),
  ];
  messages.splice(2, cut - 2, ...replacement);
  return { replaced: middle.length };
}

/** The calls the middle made, one a line: what stands in for a summary the model did not give. */
function callList(middle: readonly ChatMessage[]): string {
  const lines = middle.flatMap((message) =>
    message.role === 'assistant'
      ? message.toolCalls.map((call) => `- called ${call.name} ${call.arguments.slice(0, 200)}`)
      : [],
  );
  return lines.length > 0 ? lines.join('\n') : '- (no tool calls)';
}
