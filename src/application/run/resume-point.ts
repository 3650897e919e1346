/**
 * Going on with a run from its history (SPEC §18): the conversation as it was last sent, the
 * reply that came after it, and each call of that reply that has no recorded result settled by
 * its effect class — a read or idempotent call runs again, a transform is checked against the
 * workspace, an external call is never run again and the model is told what is known. Drift (the
 * workspace changed since the last `step_end`) is told to the model; `run_resumed` records it all.
 */
import type { ChatMessage, ToolCall, Usage } from '../../domain/messages.ts';
import type { EffectClass } from '../../domain/effects.ts';
import type { RunEventBodies } from '../../domain/run-events.ts';
import { type SpecialistPack, type Tool, canCheckApplied, effectOf } from '../ports.ts';
import type { RunOwner } from '../runs/liveness-ports.ts';
import type { CallHistory } from '../replay/run-history.ts';
import type { ResumeFrom } from './execute-task-input.ts';
import type { Conversation } from './model-turn.ts';
import { READ_OUTPUT_TOOL } from './read-output-tool.ts';
import type { RunRecorder } from './run-recorder.ts';
import type { CallApprovals } from './call-approvals.ts';
import { FINISH_TOOL, type ResultBudget, dispatchToolCall } from './tool-dispatch.ts';
import type { WorkspaceFingerprint } from './workspace-fingerprint.ts';

type InFlight = RunEventBodies['run_resumed']['in_flight'][number];

/** The loop's state on resuming. `payload`: a finish the previous process accepted and never recorded. */
export interface Resumed {
  readonly conversation: Conversation;
  readonly steps: number;
  readonly usage: Usage;
  readonly last: { readonly promptTokens: number; readonly sentCount: number } | undefined;
  /** read_output was offered before the stop: offered again, so the tool list stays the same. */
  readonly offerPaging: boolean;
  readonly payload?: Record<string, unknown>;
}

export interface ResumeInput {
  readonly from: ResumeFrom;
  readonly recorder: RunRecorder;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly pack: SpecialistPack;
  readonly fingerprint: WorkspaceFingerprint | undefined;
  readonly owner: RunOwner | undefined;
  readonly maxSteps: number;
  readonly model: { readonly id: string; readonly backend: string; readonly reason?: string };
  readonly runId: string;
  readonly signal: AbortSignal;
  readonly budget: ResultBudget | undefined;
  /** A person's approvals (SPEC §19): a call parked for one is answered here, on resuming. */
  readonly approvals?: CallApprovals | undefined;
}

/** Rebuilds the conversation, records `run_resumed`, and settles what the previous process left. */
export async function resumeFrom(input: ResumeInput): Promise<Resumed> {
  const { history } = input.from;
  const messages: ChatMessage[] = [...history.messages];
  const conversation: Conversation = { messages, sentCount: messages.length };
  const drift = await driftOf(input.fingerprint, history.fingerprint);
  const pending = (history.turn?.calls ?? []).filter((call) => call.answer === undefined);
  const plans = await Promise.all(
    pending.map((call) => planFor(call, input.tools, history.end !== undefined)),
  );
  await input.recorder.record({
    kind: 'run_resumed',
    from_seq: history.lastSeq,
    previous_status: input.from.previousStatus,
    ...(input.owner === undefined ? {} : { pid: input.owner.pid, host: input.owner.host }),
    max_steps: input.maxSteps,
    backend: input.model.backend,
    model: input.model.id,
    ...(input.model.reason === undefined ? {} : { model_reason: input.model.reason }),
    forced: input.from.forced,
    drift: [...drift.paths],
    in_flight: plans.flatMap((plan) => (plan.inFlight === undefined ? [] : [plan.inFlight])),
    turn_asked_again: history.unanswered,
  });
  let payload: Record<string, unknown> | undefined;
  let told = false;
  if (history.turn !== undefined) {
    messages.push(history.turn.message);
    const context = { runId: input.runId, step: history.steps, signal: input.signal };
    for (const call of history.turn.calls) {
      if (call.answer !== undefined) {
        messages.push(toolMessage(call.call, call.answer));
        continue;
      }
      const plan = plans[pending.indexOf(call)];
      if (plan === undefined || plan.action === 'rerun') {
        const outcome = await dispatchToolCall({
          call: call.call,
          tools: input.tools,
          pack: input.pack,
          recorder: input.recorder,
          context,
          applyGate: true,
          ...(input.budget === undefined ? {} : { budget: input.budget }),
          ...(input.approvals === undefined ? {} : { approvals: input.approvals }),
        });
        if (outcome.kind === 'finished') {
          payload = outcome.payload;
          break;
        }
        messages.push(outcome.message);
        continue;
      }
      const text = settledText(call.call, plan.action, drift, input.maxSteps);
      told ||= plan.action === 'unknown';
      if (plan.action !== 'continue')
        await input.recorder.record({
          kind: 'tool_result',
          step: history.steps,
          call_id: call.call.id,
          tool: call.call.name,
          result: text,
          duration_ms: 0,
          resumed: plan.action,
        });
      messages.push(toolMessage(call.call, text));
    }
  }
  // A person's edits are told once, after every call has its answer (roles must pair).
  const effects = plans.some((plan) => plan.inFlight !== undefined && plan.inFlight.effect !== 'read');
  if (drift.paths.length > 0 && !told)
    messages.push({ role: 'user', content: driftNote(drift.paths, effects) });
  if (input.from.previousStatus === 'max_steps' && !plans.some((plan) => plan.action === 'continue'))
    messages.push({ role: 'user', content: moreSteps(input.maxSteps) });
  return {
    conversation,
    steps: history.steps,
    usage: history.usage,
    last:
      history.lastPromptTokens > 0
        ? { promptTokens: history.lastPromptTokens, sentCount: history.messages.length }
        : undefined,
    offerPaging: history.lastTools.includes(READ_OUTPUT_TOOL),
    ...(payload === undefined ? {} : { payload }),
  };
}

type Action = InFlight['action'] | 'continue';

/** What to do with a call that has no result. */
async function planFor(
  call: CallHistory,
  tools: ReadonlyMap<string, Tool>,
  ended: boolean,
): Promise<{ action: Action; inFlight?: InFlight }> {
  const { id, name } = call.call;
  // A finish the run accepted, and ended on (max_steps' report): the run goes on past it.
  if (name === FINISH_TOOL) return ended ? { action: 'continue' } : { action: 'rerun' };
  const tool = tools.get(name);
  const args = parsed(call.call.arguments);
  const effect: EffectClass = call.started?.effect ?? (tool === undefined ? 'read' : effectOf(tool, args));
  const entry = (action: InFlight['action']) => ({
    action,
    inFlight: { call_id: id, tool: name, effect, action },
  });
  // No tool_started: the effect never began (the marker is written before it).
  if (call.started === undefined || effect === 'read' || effect === 'idempotent') return entry('rerun');
  if (effect === 'transform' && tool !== undefined && canCheckApplied(tool)) {
    const check = await tool.checkApplied(args);
    return entry(check === 'applied' ? 'verified' : check === 'not_applied' ? 'rerun' : 'unknown');
  }
  return entry('unknown');
}

/** The tool result a settled call gets. */
function settledText(call: ToolCall, action: Action, drift: Drift, maxSteps: number): string {
  switch (action) {
    case 'verified':
      return `${call.name}: the run was stopped before this call's result was recorded. The workspace shows the change was made, so it was not made again.`;
    case 'unknown': {
      const changed = !drift.known
        ? 'What changed in the workspace is not known.'
        : drift.paths.length === 0
          ? 'No file of the workspace changed since the step before it.'
          : `Files changed since the step before it (by this call, or by someone else): ${drift.paths.join(', ')}.`;
      return `${call.name}: the run was stopped while this call ran, so its result is lost. It may or may not have taken effect, and it was not run again. ${changed} Check before you rely on it.`;
    }
    default:
      return `The run was given more steps (up to step ${maxSteps}). Go on with the task, and call ${FINISH_TOOL} when it is done.`;
  }
}

interface Drift {
  /** A fingerprint was taken before and now, so the paths are known. */
  readonly known: boolean;
  readonly paths: readonly string[];
}

async function driftOf(
  fingerprint: WorkspaceFingerprint | undefined,
  before: string | undefined,
): Promise<Drift> {
  if (fingerprint === undefined || before === undefined) return { known: false, paths: [] };
  const now = await fingerprint.take();
  if (now === null) return { known: false, paths: [] };
  return { known: true, paths: now === before ? [] : await fingerprint.changed(before, now) };
}

/** The changed paths, said to the model: a person's edits, or (with effects in flight) maybe theirs. */
function driftNote(paths: readonly string[], effects: boolean): string {
  const who = effects ? 'by the calls that were in flight or by someone else' : 'by someone else';
  return `While this run was stopped, files of the workspace were changed ${who}: ${paths.join(', ')}. Read them again before you rely on what you saw of them.`;
}

function moreSteps(maxSteps: number): string {
  return `The run was given more steps (up to step ${maxSteps}). Go on with the task, and call ${FINISH_TOOL} when it is done.`;
}

function toolMessage(call: ToolCall, content: string): ChatMessage {
  return { role: 'tool', toolCallId: call.id, name: call.name, content };
}

function parsed(text: string): unknown {
  try {
    return text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return {};
  }
}
