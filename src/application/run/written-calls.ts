/**
 * Tool calls a model wrote as text instead of in `tool_calls` (SPEC §3, §16): in the content, in
 * any dialect, or in the reasoning of a turn whose content is empty. Recorded as
 * `tool_call_recovered`; a call to a tool that was not offered is never run.
 */
import type { ToolCall, ToolSpec } from '../../domain/messages.ts';
import type { ChatTurn } from '../ports.ts';
import type { RunRecorder } from './run-recorder.ts';
import {
  type RecoveredCalls,
  recoverTextToolCalls,
  recoveredId,
  scanTextToolCalls,
} from './text-tool-calls.ts';

/** What a turn's text came to: no call markup, calls to run, or markup that runs nothing. */
export type WrittenCalls =
  | { readonly kind: 'none' }
  | { readonly kind: 'calls'; readonly calls: readonly ToolCall[] }
  | { readonly kind: 'unrun'; readonly nudge: string };

/** Reads the calls a turn with no `tool_calls` wrote as text, and records what it found. */
export async function recoverWrittenCalls(
  turn: Pick<ChatTurn, 'content' | 'reasoning'>,
  specs: readonly ToolSpec[],
  step: number,
  recorder: RunRecorder,
): Promise<WrittenCalls> {
  const offered = new Set(specs.map((spec) => spec.name));
  const schemas = new Map(specs.map((spec) => [spec.name, spec.parameters]));
  const inContent = scanTextToolCalls(turn.content, offered, step, schemas);
  if (inContent !== null) {
    await record(recorder, step, inContent, {
      ...(inContent.refused.length > 0 ? { refused: [...inContent.refused] } : {}),
      ...(inContent.malformed > 0 ? { malformed: inContent.malformed } : {}),
    });
    return inContent.calls.length > 0
      ? { kind: 'calls', calls: inContent.calls }
      : { kind: 'unrun', nudge: unrunCallsNudge(inContent, offered) };
  }
  const reasoning = turn.reasoning ?? '';
  if (turn.content.trim() !== '' || reasoning.trim() === '') return { kind: 'none' };
  // The call written inside the reasoning, content empty (langchain4j #4786, LM Studio #1870,
  // vLLM's reasoning parser taking everything before </think>: quirks-2 Q24): recovered only when
  // it names an offered tool and a whole block ends the reasoning. A block followed by more
  // thought, or cut short, is the model thinking about a call (the prose case): not run.
  if (!CLOSED_AT_END.test(reasoning)) return { kind: 'none' };
  const inReasoning = recoverTextToolCalls(reasoning, offered, step, schemas);
  if (inReasoning === null) return { kind: 'none' };
  await record(recorder, step, inReasoning, { from: 'reasoning' });
  return { kind: 'calls', calls: inReasoning.calls };
}

/**
 * The end of a whole call block in any dialect `text-call-dialects.ts` reads: a closing tag or
 * token, or the bracket that closes its JSON or Python arguments.
 */
const CLOSED_AT_END =
  /(?:<\/tool_call>|<\/function>|<\|call\|>|<tool_call\|>|<\|tool_call_end\|>|\[END_TOOL_REQUEST\]|<\|eom_id\|>|<\|eot_id\|>|[}\])])\s*$/;

/**
 * Calls left in the content of a turn that also has native calls (research/local-model-quirks-2.md
 * Q27): llama-server with `parallel_tool_calls` off, or a template that cannot do parallel calls,
 * parses the first call and leaves the others in the text. Those naming an offered tool are run
 * after the native ones; one that repeats a native call (same name and arguments) is not run
 * twice. Prose beside them is kept as content, never run (quirks-2 §M).
 */
export async function recoverCallsBeside(
  turn: Pick<ChatTurn, 'content'>,
  native: readonly ToolCall[],
  specs: readonly ToolSpec[],
  step: number,
  recorder: RunRecorder,
): Promise<readonly ToolCall[]> {
  const offered = new Set(specs.map((spec) => spec.name));
  const schemas = new Map(specs.map((spec) => [spec.name, spec.parameters]));
  const found = recoverTextToolCalls(turn.content, offered, step, schemas);
  if (found === null) return [];
  const seen = new Set(native.map((call) => sameCall(call)));
  const extra = found.calls
    .filter((call) => !seen.has(sameCall(call)))
    .map((call, index) => ({ ...call, id: recoveredId(step, native.length + index) }));
  if (extra.length === 0) return [];
  await record(recorder, step, { ...found, calls: extra }, { from: 'content_beside_calls' });
  return extra;
}

/** A call's name and arguments as one key, the arguments' keys sorted so spacing and order do not matter. */
function sameCall(call: ToolCall): string {
  let args: unknown = call.arguments;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    // compared as written
  }
  return `${call.name} ${JSON.stringify(args, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)))
      : value,
  )}`;
}

function record(
  recorder: RunRecorder,
  step: number,
  recovered: RecoveredCalls,
  extra: { refused?: string[]; malformed?: number; from?: 'reasoning' | 'content_beside_calls' },
): Promise<unknown> {
  return recorder.record({
    kind: 'tool_call_recovered',
    step,
    format: recovered.format,
    tool_calls: recovered.calls.map((call) => ({ ...call })),
    ...extra,
  });
}

/** What the model hears when the calls it wrote as text could not be run. */
function unrunCallsNudge(recovered: RecoveredCalls, offered: ReadonlySet<string>): string {
  const names = [...new Set(recovered.refused)].map((name) => `"${name}"`).join(', ');
  const why =
    recovered.refused.length > 0
      ? `called ${names}, which ${recovered.refused.length === 1 ? 'is not a tool' : 'are not tools'} here`
      : 'could not be read';
  return (
    `Your reply wrote a tool call as text (${recovered.format}) that ${why}, so nothing ran. ` +
    `The tools are: ${[...offered].join(', ')}. Call one of them, or call finish_task with your result.`
  );
}
