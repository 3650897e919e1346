import { FabricError, errorMessage } from '../../domain/errors.ts';
import { type Usage, ZERO_USAGE, addUsage } from '../../domain/messages.ts';
import { type RunResult, type RunStatus, isRunInterruption } from '../../domain/run-result.ts';
import type { Conversation } from './model-turn.ts';
import { type RunLog, type RunLogStore, type Tool, canReopen } from '../ports.ts';
import { newRunId } from './run-id.ts';
import { RunRecorder } from './run-recorder.ts';
import { type StepOutcome, runStep } from './step.ts';
import { type StuckPattern, StuckWatch, describeStuck, stuckMessage } from './stuck-watch.ts';
import { keepInWindow } from './window-keeper.ts';
import { READ_OUTPUT_TOOL } from './read-output-tool.ts';
import type { ExecuteTaskInput } from './execute-task-input.ts';
import { finishSpec, recordStart, resultPaging, usageFields, windowPlanOf } from './run-setup.ts';
import { resumeFrom } from './resume-point.ts';
import { Steering } from './steering.ts';
import { CallApprovals, RunParked } from './call-approvals.ts';

export type { ExecuteTaskInput, RunProfile } from './execute-task-input.ts';

const FINAL_TURN_GRACE_MS = 120_000;

/**
 * The tool loop (SPEC §3): open the pack, ask the model, run its tool calls, until `finish_task`
 * is accepted, the model answers in plain text, the step or time budget runs out, or the run is
 * cancelled. Every outcome is written to the runlog and returned; it never ends silently.
 */
export async function executeTask(input: ExecuteTaskInput): Promise<RunResult> {
  const runId = input.runId ?? newRunId(input.clock);
  const log = await openLog(input.runLogStore, runId, input.resume !== undefined);
  const recorder = new RunRecorder(log, input.observers ?? [], input.fence);
  const started = Date.now();
  const state: RunState = { steps: 0, usage: ZERO_USAGE as Usage, last: undefined, cached: undefined };
  let status: RunStatus = 'failed';
  let payload: Record<string, unknown> | null = null;
  let failure: { code: string; message: string } | null = null;
  const budget = AbortSignal.timeout(input.limits.budgetMs);
  const signal = AbortSignal.any([input.signal, budget]);
  const approvals =
    input.approvals === undefined ? undefined : new CallApprovals(input.approvals, recorder, runId);
  let parked: RunParked | undefined;
  try {
    if (input.resume === undefined) await recordStart(recorder, input);
    await input.pack.open(input.signal);
    const tools = input.pack.tools();
    let conversation: Conversation = {
      messages: [
        { role: 'system', content: input.pack.systemPrompt },
        { role: 'user', content: input.task },
      ],
      sentCount: 0,
    };
    const toolMap = new Map(tools.map((tool) => [tool.spec.name, tool]));
    const plan = windowPlanOf(input, conversation, tools);
    const paging = resultPaging(input, runId, plan);
    let specs = [...tools.map((tool) => tool.spec), finishSpec(input.pack)];
    /** Once a result was cut, read_output is offered (a change of the tool list, once). */
    const offerPaging = (offered = false) => {
      if ((!offered && !paging.cut()) || paging.tool === undefined || toolMap.has(READ_OUTPUT_TOOL)) return;
      toolMap.set(READ_OUTPUT_TOOL, paging.tool);
      specs = [...tools.map((tool) => tool.spec), paging.tool.spec, finishSpec(input.pack)];
    };
    let outcome: StepOutcome = { kind: 'continue' };
    if (input.resume !== undefined) {
      // The same run goes on (SPEC §18): the conversation as last sent, what was in flight settled.
      const resumed = await resumeFrom({
        from: input.resume,
        recorder,
        tools: toolMap,
        pack: input.pack,
        fingerprint: input.fingerprint,
        owner: input.owner,
        maxSteps: input.limits.maxSteps,
        model: input.model,
        runId,
        signal,
        budget: paging.budget,
        approvals,
      });
      conversation = resumed.conversation;
      Object.assign(state, { steps: resumed.steps, usage: resumed.usage, last: resumed.last });
      offerPaging(resumed.offerPaging);
      if (resumed.payload !== undefined)
        outcome = { kind: 'finished', payload: resumed.payload, via: 'finish_task' };
    }
    // The workspace as the run found it (or the resume left it): what the next step's effects,
    // and a later resume's drift, are told against. After the window check: a run that cannot
    // start records nothing more.
    await endStep(recorder, input, state);
    const watch = new StuckWatch(input.limits.stuckRepeats);
    let warned = false;
    let stuck: StuckPattern | null = null;
    const steering = input.inbox === undefined ? undefined : new Steering(input.inbox, recorder);
    while (outcome.kind === 'continue' && state.steps < input.limits.maxSteps && !signal.aborted) {
      // A person's messages land here, after the step that was running (SPEC §19); a pause holds here.
      await steering?.between(state.steps, conversation, signal);
      if (signal.aborted) break;
      state.steps += 1;
      state.cached = undefined;
      if (plan !== undefined && state.steps > 1)
        state.last = await keepInWindow({
          window: plan.windowTokens,
          replyRoom: plan.replyRoom,
          recorder,
          conversation,
          specs,
          step: state.steps,
          last: state.last,
          chat: input.chat,
          model: input.model.id,
          runId,
          ...(input.profile === undefined ? {} : { settings: input.profile.turn }),
          signal,
          addUsage: (usage) => {
            state.usage = addUsage(state.usage, usage);
          },
        });
      // The turn after one cut by the output limit asks for more (quirks-2 Q12), once.
      const raised = outcome.kind === 'continue' ? outcome.outputLimit : undefined;
      const turnWatch = steering?.watchTurn();
      outcome = await runStep({
        ...stepInput(input, recorder, conversation, toolMap, runId, state),
        approvals,
        specs,
        ...(turnWatch === undefined ? {} : { turnSignal: turnWatch.signal }),
        budget: paging.budget,
        ...(plan === undefined ? {} : { windowTokens: plan.windowTokens }),
        ...(raised === undefined ? {} : { raisedOutputLimit: raised }),
        signal,
      }).finally(() => turnWatch?.stop());
      offerPaging();
      await endStep(recorder, input, state);
      const seen = outcome.kind === 'continue' ? watch.observe(outcome.answered ?? []) : null;
      if (seen === null) continue;
      await recorder.record({
        kind: 'run_stuck',
        step: state.steps,
        ...seen,
        calls: [...seen.calls],
        action: warned ? 'stopped' : 'warned',
      });
      if (warned) {
        stuck = seen;
        break;
      }
      // Told once; if it goes on, the run ends (SPEC §17).
      warned = true;
      watch.reset();
      conversation.messages.push({ role: 'user', content: stuckMessage(seen) });
    }
    if (input.signal.aborted) throw input.signal.reason;
    switch (outcome.kind) {
      case 'finished':
        status = 'succeeded';
        payload = outcome.payload;
        break;
      case 'continue': {
        // Out of steps or time, or stuck: one last request that offers only finish_task (SPEC §3).
        const why =
          stuck !== null
            ? `The run is stuck: ${describeStuck(stuck)}, after the model was told.`
            : budget.aborted
              ? `The time budget of ${Math.round(input.limits.budgetMs / 1000)} s is used up.`
              : `The step limit of ${input.limits.maxSteps} is reached.`;
        conversation.messages.push({
          role: 'user',
          content: `${why} Stop working now and call finish_task: report what you did, what works, and what is left to do.`,
        });
        state.steps += 1;
        const finalSignal = AbortSignal.any([input.signal, AbortSignal.timeout(FINAL_TURN_GRACE_MS)]);
        const final = await runStep({
          // The same tools are offered, so the request's prefix is the one the server cached;
          // only finish_task is answered (SPEC §17).
          ...stepInput(input, recorder, conversation, new Map(), runId, state),
          specs,
          signal: finalSignal,
          finalTurn: true,
        });
        if (input.signal.aborted) throw input.signal.reason;
        status = stuck === null ? 'max_steps' : 'failed';
        payload =
          final.kind === 'finished'
            ? final.payload
            : { summary: `${why} The model did not report through finish_task.` };
        if (stuck !== null) failure = { code: 'run_stuck', message: why };
        break;
      }
    }
  } catch (error) {
    if (error instanceof RunParked && !input.signal.aborted) {
      // Parked (SPEC §19): nothing holds the model or a worker; an answer resumes it (§18).
      status = 'awaiting_approval';
      parked = error;
    } else if (input.signal.aborted && isRunInterruption(input.signal.reason)) {
      // Its worker lost the lease: the control plane already says `interrupted`, and so does the runlog.
      status = 'interrupted';
      failure = { code: 'run_cancelled', message: input.signal.reason.message };
    } else if (input.signal.aborted) {
      status = 'cancelled';
      failure = { code: 'run_cancelled', message: 'The run was cancelled.' };
    } else {
      status = 'failed';
      failure =
        error instanceof FabricError
          ? { code: error.code, message: error.message }
          : { code: 'internal', message: `Unexpected error: ${errorMessage(error)}` };
    }
  } finally {
    await input.pack.close().catch(() => {});
  }
  try {
    await recorder.record({
      kind: 'run_end',
      status,
      payload,
      error: failure,
      steps: state.steps,
      usage: usageFields(state.usage),
      duration_ms: Date.now() - started,
    });
  } catch (error) {
    // A runlog that cannot take its end (a full disk) is still closed: no file stays open.
    await log.close().catch(() => {});
    throw error;
  }
  await log.close();
  return {
    run_id: runId,
    status,
    payload,
    error: failure,
    model: input.model.id,
    backend: input.model.backend,
    steps: state.steps,
    usage: usageFields(state.usage),
    runlog: log.location,
    ...(parked === undefined ? {} : { approval: parkedApproval(parked) }),
  };
}

function parkedApproval(parked: RunParked): NonNullable<RunResult['approval']> {
  const { id, tool, argv, path } = parked.approval;
  return { id, tool, ...(argv === undefined ? {} : { argv }), ...(path === undefined ? {} : { path }) };
}

function stepInput(
  input: ExecuteTaskInput,
  recorder: RunRecorder,
  conversation: Conversation,
  tools: ReadonlyMap<string, Tool>,
  runId: string,
  state: RunState,
) {
  return {
    chat: input.chat,
    model: input.model.id,
    recorder,
    conversation,
    tools,
    pack: input.pack,
    runId,
    step: state.steps,
    recoverTextToolCalls: input.limits.recoverTextToolCalls,
    ...(input.profile === undefined
      ? {}
      : {
          settings: input.profile.turn,
          passReasoningBack: input.profile.passReasoningBack,
          ...(input.profile.settings.tool_call_ids === 'nine_alnum' ? { nineAlnumIds: true } : {}),
          ...(input.profile.settings.reasoning_budget === undefined
            ? {}
            : { reasoningBudget: input.profile.settings.reasoning_budget }),
        }),
    finalTurn: false,
    addUsage: (usage: Usage) => {
      state.usage = addUsage(state.usage, usage);
      // What the server counted for this request, and how much of the conversation it held.
      state.last = { promptTokens: usage.promptTokens, sentCount: conversation.sentCount };
      if (usage.cachedTokens !== undefined) state.cached = (state.cached ?? 0) + usage.cachedTokens;
    },
  };
}

/** A new runlog, or a resumed run's own, appended to after its last whole line (SPEC §18). */
function openLog(store: RunLogStore, runId: string, resume: boolean): Promise<RunLog> {
  if (!resume) return store.create(runId);
  if (!canReopen(store))
    throw new FabricError('internal', `This runlog store cannot reopen run ${runId} to resume it.`);
  return store.reopen(runId);
}

/**
 * `step_end` (SPEC §18): the workspace as the step left it and the prompt tokens the server's
 * cache served. A run without a workspace has nothing to fingerprint and records none.
 */
async function endStep(recorder: RunRecorder, input: ExecuteTaskInput, state: RunState): Promise<void> {
  if (input.fingerprint === undefined) return;
  const fingerprint = await input.fingerprint.take();
  await recorder.record({
    kind: 'step_end',
    step: state.steps,
    ...(fingerprint === null ? {} : { fingerprint }),
    ...(state.cached === undefined ? {} : { cached_tokens: state.cached }),
  });
}

/** The loop's running state. */
interface RunState {
  steps: number;
  usage: Usage;
  /** The last request's prompt tokens, as the server counted them, and the messages it held. */
  last: { readonly promptTokens: number; readonly sentCount: number } | undefined;
  /** The prompt tokens the server's cache served this step, when it said. */
  cached: number | undefined;
}
