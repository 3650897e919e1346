import type { EffectClass } from './effects.ts';
import type { RunStatus } from './run-result.ts';

/** Version of the runlog line format. Readers accept every earlier version. */
export const RUNLOG_FORMAT_VERSION = 1;

/** Fields every runlog line carries. */
export interface RunEventEnvelope {
  readonly v: number;
  readonly kind: RunEventKind;
  readonly ts: string;
  readonly run_id: string;
  readonly seq: number;
}

export interface UsageFields {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  /** Prompt tokens served from the server's cache, when it says (llama-server, OpenAI). */
  readonly cached_tokens?: number;
}

/** The body of each event kind; the envelope is added by the runlog. */
export interface RunEventBodies {
  run_start: {
    specialist: string;
    task: string;
    model: string;
    backend: string;
    backend_url?: string;
    model_reason?: string;
    workspace: string | null;
    config_digest: string;
    fabric_version: string;
    max_steps: number;
    budget_s: number;
    /**
     * The process that owns the run, so a reader can tell a run in progress from one whose
     * process died without its `run_end` (SPEC §6). Absent in runlogs written before they
     * were recorded.
     */
    pid?: number;
    host?: string;
    /** What the caller labelled the run with (a battery and its cell, the daemon's task). */
    tags?: Readonly<Record<string, string>>;
    /**
     * Who alone goes on with the run once it is parked or left (SPEC §19): `daemon`, the OpenSpec
     * daemon of its workspace, which sets a parked run's edits aside and brings them back itself.
     * Absent: any process that can reach the workspace.
     */
    resumer?: string;
    /**
     * The model profile the run used (SPEC §16): the globs that matched (config first), where the
     * shipped settings come from, the settings, and the think level actually sent (absent when
     * the model is not known to think).
     */
    /** The context window the run's tool results were budgeted to (SPEC §17), when known. */
    window_tokens?: number;
    /** How that window came to be, when a reader should know (SPEC §17): loaded now, or less than asked for. */
    window_note?: string;
    /** Where the window came from: the server's own figure (num_ctx, /props n_ctx, max_model_len, …) or the target. */
    window_source?: string;
    /** The server's build or version, as it reports it (research/local-model-quirks-2.md Q33): absent when it does not. */
    server_build?: string;
    /** What reads the model's tool calls, where the server says (Q33, Q34). */
    tool_parser?: string;
    profile?: {
      matched: string[];
      source?: string;
      settings: Record<string, unknown>;
      think_sent?: string;
    };
  };
  llm_request: {
    step: number;
    model: string;
    messages: number;
    tools: string[];
    final_turn: boolean;
    /**
     * The output limit this request asked for when it was raised because the turn before was cut
     * by it (research/local-model-quirks-2.md Q12); absent otherwise (the profile's, if any).
     */
    max_tokens?: number;
    /** The messages added since the previous request, so a replay can rebuild the conversation. */
    new_messages: unknown[];
  };
  llm_response: {
    step: number;
    /** The answer's text; reasoning is never in it (SPEC §16). */
    content: string;
    /** What the model reasoned this turn, apart from the content; absent when it did not. */
    reasoning?: string;
    /** The reasoning's tokens, when the server counts them apart. */
    reasoning_tokens?: number;
    tool_calls: { id: string; name: string; arguments: string }[];
    finish_reason: string | null;
    usage: UsageFields;
    latency_ms: number;
    /**
     * Milliseconds from the request to the stream's first token (text, reasoning or a tool call);
     * absent in runlogs written before it was recorded, and when the turn streamed nothing.
     */
    ttft_ms?: number;
    attempts: number;
    backend: string;
  };
  /**
   * A turn that reasoned past its profile's budget with no content or call was cut off and is
   * asked again once, a think level lower (SPEC §16).
   */
  reasoning_cut: {
    step: number;
    reasoning_chars: number;
    budget_tokens: number;
    think_before?: string;
    think_after?: string;
  };
  /**
   * The model repeats itself (SPEC §17): the same call, arguments and result `repeats` times in a
   * row, or two such calls alternating. `warned`: it was told once; `stopped`: it went on, and
   * the run ends through the finish-only turn, `failed` with `run_stuck`.
   */
  run_stuck: {
    step: number;
    pattern: 'repeat' | 'alternate';
    calls: string[];
    repeats: number;
    action: 'warned' | 'stopped';
  };
  /**
   * The conversation would have passed ~80% of the window: the oldest tool results were replaced
   * by one-line stubs (SPEC §17). Tokens are estimates, before and after.
   */
  compaction: {
    step: number;
    window_tokens: number;
    tokens_before: number;
    tokens_after: number;
    stubbed: number;
    /** Messages replaced by the model's summary, when stubs were not enough (SPEC §17). */
    summarised?: number;
  };
  llm_retry: {
    step: number;
    attempt: number;
    delay_ms: number;
    reason: string;
  };
  tool_call_recovered: {
    step: number;
    /** The dialect the calls were written in (SPEC §16). */
    format: string;
    /** The calls that name an offered tool, run as if they came in `tool_calls`. */
    tool_calls: { id: string; name: string; arguments: string }[];
    /** Tools the text called that were not offered: never run. */
    refused?: string[];
    /** Blocks of call markup that could not be read. */
    malformed?: number;
    /**
     * `reasoning` when the calls were written in the reasoning of a turn with empty content;
     * `content_beside_calls` when they were left in the content of a turn that also had native
     * calls (a server that parsed only the first, research/local-model-quirks-2.md Q27).
     */
    from?: 'reasoning' | 'content_beside_calls';
  };
  text_fallback: {
    step: number;
    content: string;
  };
  /**
   * A turn the model or its server delivered wrong, and what the fabric did about it
   * (research/local-model-quirks-2.md; `note` names the case, e.g. `Q12`).
   */
  model_quirk: {
    step: number;
    quirk: ModelQuirk;
    note: string;
    /** What happened and what was done, in words. */
    detail: string;
    call_id?: string;
    tool?: string;
    /** The argument the quirk is in (an over-escaped file content, Q4). */
    field?: string;
    /** The model's own text as it arrived (arguments, or the output a server could not parse). */
    raw?: string;
  };
  tool_call: {
    step: number;
    call_id: string;
    tool: string;
    arguments: string;
  };
  /**
   * A tool with an effect is about to run (SPEC §18), on disk before it does: a run resumed after
   * its process died knows the call started, and by its class what to do about it.
   */
  tool_started: {
    step: number;
    call_id: string;
    tool: string;
    /** `sha256:` and the hex digest of the arguments as the model wrote them. */
    args_digest: string;
    effect: EffectClass;
  };
  tool_result: {
    step: number;
    call_id: string;
    tool: string;
    result: string;
    duration_ms: number;
    /**
     * The file change the tool made, as a unified diff (SPEC §6), bounded (a last `\ diff cut`
     * line says so). Absent for tools that change no file, and in runlogs written before it.
     */
    diff?: string;
    /**
     * The result was larger than its share of the window (SPEC §17): `result` is its head and
     * tail, and the whole output (`chars` long) is kept at `location` for `read_output`.
     */
    kept?: { chars: number; location: string };
    /**
     * A resumed run settled a call its previous process started and never answered (SPEC §18):
     * `verified` — a transform found already applied; `unknown` — an external call (or a transform
     * the workspace could not tell) that may or may not have taken effect, not run again.
     */
    resumed?: 'verified' | 'unknown';
  };
  tool_error: {
    step: number;
    call_id: string;
    tool: string;
    error: string;
    reason: 'unknown_tool' | 'invalid_json' | 'invalid_arguments' | 'refused' | 'failed' | 'timeout';
    duration_ms: number;
  };
  security_event: {
    step: number;
    call_id: string;
    tool: string;
    event_type: string;
    rule: string;
    requested?: unknown;
    resolved?: unknown;
  };
  finish_rejected: {
    step: number;
    call_id: string;
    reason: 'invalid_payload' | 'gate_failed';
    message: string;
  };
  /**
   * The pack's finish gate accepted the finish (the Rust pack: `cargo check` passed), with what it
   * checked; the run's `run_end` follows. Absent in runlogs written before it was recorded.
   */
  finish_gate_passed: {
    step: number;
    call_id: string;
    message: string;
  };
  /**
   * A step ended (SPEC §18): the workspace as it is now (a git tree id of its tracked and
   * untracked, not ignored files, the runs directory left out; absent without a workspace or when
   * it could not be taken) and the prompt tokens the server served from its cache this step.
   */
  step_end: {
    step: number;
    fingerprint?: string;
    cached_tokens?: number;
  };
  /**
   * The run goes on in another process (SPEC §18): after the line `from_seq`, which ended it
   * `previous_status`. `drift` names the paths changed since the last `step_end` (a person's
   * edits, or, with an effect in flight, maybe its own);
   * `in_flight` what was found unfinished and what was done about it.
   */
  run_resumed: {
    from_seq: number;
    previous_status: RunStatus;
    pid?: number;
    host?: string;
    max_steps: number;
    backend: string;
    /** The model it goes on with, and why (the server it was on, or why not); absent in older runlogs. */
    model?: string;
    model_reason?: string;
    forced: boolean;
    drift: string[];
    in_flight: {
      call_id: string;
      tool: string;
      effect: EffectClass;
      action: 'rerun' | 'verified' | 'unknown';
    }[];
    /** A model turn was being answered when the process stopped: it is asked again. */
    turn_asked_again: boolean;
  };
  /**
   * A person's message to a running run (SPEC §19 steering), added as a user message at the end
   * of the conversation after step `after_step`; `interrupt` also cut the model turn in progress.
   */
  steer_message: {
    id: string;
    text: string;
    mode: 'steer' | 'interrupt';
    channel: string;
    after_step: number;
  };
  /** The run holds between steps (SPEC §19): no model request until it is un-paused. */
  run_paused: {
    step: number;
    channel: string;
  };
  /**
   * A call a rule says `ask` about waits for a person (SPEC §19): what they are shown — the exact
   * argv or path, the deciding rule, and the broader patterns a grant could use.
   */
  approval_requested: {
    step: number;
    call_id: string;
    approval_id: string;
    tool: string;
    argv?: string[];
    path?: string;
    rule: string;
    on_approval: 'wait' | 'park' | 'deny' | 'fail';
    proposals: { label: string; matches: string; does_not_match: string }[];
    expires_at?: string;
  };
  /**
   * The answer (SPEC §19): who (the channel, and a name where it knows one), the state, the scope
   * and the pattern a lasting grant uses. `expired` is nobody's answer; `grant`: an earlier grant
   * covered the call.
   */
  approval_decided: {
    step: number;
    call_id: string;
    approval_id: string;
    state: 'approved' | 'denied' | 'expired' | 'cancelled';
    scope: 'once' | 'run' | 'specialist';
    pattern?: string;
    channel: string;
    by?: string;
    message?: string;
    answered_at?: string;
    grant_id?: string;
    grant_expires_at?: string;
  };
  /** A paused run goes on (not §18's `run_resumed`: the same process never stopped). */
  run_unpaused: {
    step: number;
    channel: string;
  };
  run_end: {
    status: RunStatus;
    payload: Record<string, unknown> | null;
    error: { code: string; message: string } | null;
    steps: number;
    usage: UsageFields;
    duration_ms: number;
  };
}

export type RunEventKind = keyof RunEventBodies;

/** The kinds of `model_quirk`: arguments mended or unreadable, a cut turn, an empty one, a server's parser failing. */
export type ModelQuirk =
  | 'arguments_repaired'
  | 'arguments_unreadable'
  | 'arguments_overescaped'
  | 'turn_cut'
  | 'empty_turn'
  | 'parse_failed';

/** A runlog line as written: the envelope plus the body of its kind. */
export type RunEvent = {
  [K in RunEventKind]: RunEventEnvelope & { readonly kind: K } & RunEventBodies[K];
}[RunEventKind];

/** An event before the runlog stamps it with `v`, `ts`, `run_id` and `seq`. */
export type RunEventInput = {
  [K in RunEventKind]: { readonly kind: K } & RunEventBodies[K];
}[RunEventKind];
