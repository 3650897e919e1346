import { ToolError, errorMessage } from '../../domain/errors.ts';
import type { ToolCall, ToolMessage } from '../../domain/messages.ts';
import type { RunEventBodies } from '../../domain/run-events.ts';
import { hasEffect } from '../../domain/effects.ts';
import {
  type SpecialistPack,
  type Tool,
  type ToolContext,
  type ToolOutput,
  effectOf,
  hasFinishGate,
  isPolicyChecked,
} from '../ports.ts';
import type { CallApprovals } from './call-approvals.ts';
import { argumentsDigest } from './arguments-digest.ts';
import { MAX_RESULT_CHARS, cutResult } from './output-budget.ts';
import type { RunRecorder } from './run-recorder.ts';

export const FINISH_TOOL = 'finish_task';

/** What a result may add to the conversation, and where a larger one is kept whole (SPEC §17). */
export interface ResultBudget {
  readonly maxChars: number;
  /** Keeps a cut result's whole text; returns where. Without it, a larger result is only cut. */
  readonly keep?: (callId: string, text: string) => Promise<string>;
}

/** What one tool call came to. */
export type CallOutcome =
  | { readonly kind: 'answered'; readonly message: ToolMessage }
  | { readonly kind: 'finished'; readonly payload: Record<string, unknown> };

type ToolErrorReason = RunEventBodies['tool_error']['reason'];

/** Executes one tool call; every failure becomes the tool result the model sees, never a thrown error. */
export async function dispatchToolCall(options: {
  call: ToolCall;
  tools: ReadonlyMap<string, Tool>;
  pack: SpecialistPack;
  recorder: RunRecorder;
  context: ToolContext;
  /** On the final finish-only turn, the finish gate is not applied: the run ends either way. */
  applyGate: boolean;
  /** What one result may add (default: 64 KiB, nothing kept). */
  budget?: ResultBudget;
  /**
   * The final turn: the tool list stays as it was (the server's cached prefix with it, SPEC §17)
   * but every call except finish_task is refused unrun.
   */
  onlyFinish?: boolean;
  /**
   * Why the call cannot run though its tool exists: its arguments were not a JSON object (stored
   * as `{}`, research/local-model-quirks-2.md Q7), a file-content field arrived over-escaped (Q4),
   * or its turn was cut (Q12). The model is told.
   */
  problem?: {
    readonly reason: 'invalid_json' | 'invalid_arguments' | 'refused';
    readonly message: string;
  };
  /**
   * Asks a person about a call a rule says `ask` about (SPEC §19); may park the run (throws
   * `RunParked`). Without it, such a call is refused as needing an approval nobody can give.
   */
  approvals?: CallApprovals | undefined;
  /**
   * The run's own signal, when `context.signal` also aborts on a person's `interrupt` (SPEC §19):
   * an interrupted call is stopped and answered, and only the run's abort ends the run.
   */
  runSignal?: AbortSignal;
}): Promise<CallOutcome> {
  const { call, tools, recorder, context } = options;
  await recorder.record({
    kind: 'tool_call',
    step: context.step,
    call_id: call.id,
    tool: call.name,
    arguments: call.arguments,
  });
  if (call.name === FINISH_TOOL) return handleFinish(options);
  const started = Date.now();
  const fail = async (reason: ToolErrorReason, error: string): Promise<CallOutcome> => {
    await recorder.record({
      kind: 'tool_error',
      step: context.step,
      call_id: call.id,
      tool: call.name,
      error,
      reason,
      duration_ms: Date.now() - started,
    });
    return answer(call, `Error: ${error}`);
  };
  if (options.onlyFinish === true) {
    return fail(
      'refused',
      `Not run: the run is at its limit, and only ${FINISH_TOOL} is accepted now. Call ${FINISH_TOOL} with what you did, what works and what is left.`,
    );
  }
  const tool = tools.get(call.name);
  if (!tool) {
    const names = [...tools.keys(), FINISH_TOOL].join(', ');
    return fail('unknown_tool', `There is no tool "${call.name}". The tools are: ${names}.`);
  }
  if (options.problem !== undefined) return fail(options.problem.reason, options.problem.message);
  const parsed = parseArguments(call.arguments);
  if (!parsed.ok) return fail(parsed.reason, parsed.message);
  const validation = tool.validate(parsed.value);
  if (!validation.ok)
    return fail('invalid_arguments', `Invalid arguments for ${call.name}: ${validation.message}.`);
  // Before `tool_started`: a call parked for approval never started, and a resumed run asks again.
  let runContext = context;
  let note: string | undefined;
  const check = isPolicyChecked(tool) ? tool.checkPolicy(validation.value) : undefined;
  if (options.approvals !== undefined && check !== undefined) {
    if (check.decision === 'ask') {
      const decided = await options.approvals.decide(
        call,
        check,
        context.step,
        options.runSignal ?? context.signal,
      );
      if (decided.kind === 'refuse') return fail('refused', decided.text);
      runContext = { ...context, approved: { argv: decided.argv } };
      note = decided.note;
    }
  }
  const effect = effectOf(tool, validation.value);
  // On disk before the effect: a run resumed after a kill knows this call started (SPEC §18).
  // A call a rule denies never starts: the guard refuses it unrun.
  if (hasEffect(effect) && check?.decision !== 'deny')
    await recorder.record({
      kind: 'tool_started',
      step: context.step,
      call_id: call.id,
      tool: call.name,
      args_digest: await argumentsDigest(call.arguments),
      effect,
    });
  try {
    const output = await tool.run(validation.value, runContext);
    const whole = note === undefined ? outputText(output) : `${outputText(output)}\n${note}`;
    const budget = options.budget ?? { maxChars: MAX_RESULT_CHARS };
    const keptAt =
      whole.length > budget.maxChars && budget.keep !== undefined
        ? await budget.keep(call.id, whole)
        : undefined;
    const result =
      keptAt === undefined ? bound(whole, budget.maxChars) : cutResult(whole, budget.maxChars, call.id);
    const diff = typeof output === 'string' ? undefined : output.diff;
    await recorder.record({
      kind: 'tool_result',
      step: context.step,
      call_id: call.id,
      tool: call.name,
      result,
      duration_ms: Date.now() - started,
      ...(diff ? { diff } : {}),
      ...(keptAt === undefined ? {} : { kept: { chars: whole.length, location: keptAt } }),
    });
    return answer(call, result);
  } catch (error) {
    if (context.signal.aborted && (options.runSignal === undefined || options.runSignal.aborted)) throw error;
    if (context.signal.aborted)
      return fail(
        'failed',
        `Stopped: a person interrupted this step with a message (it follows), so ${call.name} was cancelled before it finished; what it did may be partial. ${
          error instanceof ToolError ? error.message : errorMessage(error)
        }`,
      );
    if (error instanceof ToolError && error.securityEvent) {
      const event = error.securityEvent;
      await recorder.record({
        kind: 'security_event',
        step: context.step,
        call_id: call.id,
        tool: call.name,
        event_type: event.eventType,
        rule: event.rule,
        ...(event.requested === undefined ? {} : { requested: event.requested }),
        ...(event.resolved === undefined ? {} : { resolved: event.resolved }),
      });
      return fail('refused', error.message);
    }
    const reason: ToolErrorReason = /timed? ?out/i.test(errorMessage(error)) ? 'timeout' : 'failed';
    return fail(
      reason,
      error instanceof ToolError ? error.message : `${call.name} failed: ${errorMessage(error)}`,
    );
  }
}

async function handleFinish(options: {
  call: ToolCall;
  pack: SpecialistPack;
  recorder: RunRecorder;
  context: ToolContext;
  applyGate: boolean;
  problem?: { readonly message: string };
}): Promise<CallOutcome> {
  const { call, pack, recorder, context } = options;
  const reject = async (reason: 'invalid_payload' | 'gate_failed', message: string): Promise<CallOutcome> => {
    await recorder.record({ kind: 'finish_rejected', step: context.step, call_id: call.id, reason, message });
    return answer(call, `finish_task was not accepted: ${message}`);
  };
  if (options.problem !== undefined) return reject('invalid_payload', options.problem.message);
  const parsed = parseArguments(call.arguments);
  if (!parsed.ok)
    return reject('invalid_payload', `${parsed.message} Call finish_task again with a JSON object.`);
  const validation = pack.finish.validate(parsed.value);
  if (!validation.ok) {
    return reject('invalid_payload', `${validation.message}. Fix these fields and call finish_task again.`);
  }
  if (options.applyGate && hasFinishGate(pack)) {
    const gate = await pack.checkFinish(validation.value, context);
    if (!gate.ok) return reject('gate_failed', gate.message);
    // A pass is recorded too: a finish the gate checked reads differently from one it did not.
    await recorder.record({
      kind: 'finish_gate_passed',
      step: context.step,
      call_id: call.id,
      message: gate.message ?? 'the finish gate passed',
    });
  }
  return { kind: 'finished', payload: validation.value };
}

type Parsed =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly reason: 'invalid_json' | 'invalid_arguments'; readonly message: string };

function parseArguments(text: string): Parsed {
  if (text.trim() === '') return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
    return {
      ok: false,
      reason: 'invalid_json',
      message: `The arguments are not valid JSON (${errorMessage(error)}): ${excerpt}`,
    };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reason: 'invalid_arguments', message: 'The arguments must be a JSON object.' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** The text of a tool's answer, the part the model sees. */
export function outputText(output: string | ToolOutput): string {
  return typeof output === 'string' ? output : output.text;
}

function answer(call: ToolCall, content: string): CallOutcome {
  return { kind: 'answered', message: { role: 'tool', toolCallId: call.id, name: call.name, content } };
}

function bound(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const omitted = text.length - maxChars;
  return `${text.slice(0, maxChars)}\n[… ${omitted} characters cut: ask for a smaller part]`;
}
