import { describeCompaction } from '../../domain/describe-compaction.ts';
import { describeStuck } from '../run/stuck-watch.ts';
import { describeRecovered } from '../../domain/recovered-calls.ts';
import type { RunEvent, RunEventKind, UsageFields } from '../../domain/run-events.ts';
import type { RunStatus } from '../../domain/run-result.ts';
import { showArgv, showText } from '../../domain/show-argv.ts';
import { plural } from '../../domain/words.ts';
import { lastOutcome } from './run-history.ts';

/** How an entry reads at a glance; the CLI maps it to a colour. */
export type TimelineTone = 'info' | 'call' | 'ok' | 'error' | 'warn' | 'dim';

/** One runlog line as a timeline row. */
export interface TimelineEntry {
  readonly seq: number;
  /** The loop step the line belongs to; `null` for `run_start` and `run_end`. */
  readonly step: number | null;
  /** Milliseconds since the first line of the run. */
  readonly offset_ms: number;
  readonly kind: RunEventKind;
  readonly tone: TimelineTone;
  /** One line, without the step or the offset. */
  readonly text: string;
}

/** What the whole run came to. */
export interface TimelineTotals {
  readonly status: RunStatus | 'running';
  readonly steps: number;
  readonly usage: UsageFields;
  readonly tool_calls: number;
  readonly tool_errors: number;
  readonly finish_rejected: number;
  readonly retries: number;
  readonly duration_ms: number;
}

/** A run as a timeline: one entry per runlog line, and the totals. */
export interface Timeline {
  readonly run_id: string;
  readonly specialist: string | null;
  readonly task: string | null;
  readonly entries: readonly TimelineEntry[];
  readonly totals: TimelineTotals;
  /** The runlog ends with a partial line: the process was killed while writing it. */
  readonly torn: boolean;
}

const PREVIEW = 160;

/** Turns a run's events into a timeline. Pure: the caller reads the runlog. */
export function buildTimeline(run: {
  readonly runId: string;
  readonly events: readonly RunEvent[];
  readonly torn: boolean;
}): Timeline {
  const first = run.events[0];
  const origin = first === undefined ? 0 : Date.parse(first.ts);
  let start: Extract<RunEvent, { kind: 'run_start' }> | undefined;
  // The last run_end, unless the run was resumed after it (SPEC §18).
  const end = lastOutcome(run.events);
  const counted = { steps: 0, toolCalls: 0, toolErrors: 0, rejected: 0, retries: 0 };
  const usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const event of run.events) {
    switch (event.kind) {
      case 'run_start':
        start = event;
        break;
      case 'llm_request':
        counted.steps = Math.max(counted.steps, event.step);
        break;
      case 'llm_response':
        usage.prompt_tokens += event.usage.prompt_tokens;
        usage.completion_tokens += event.usage.completion_tokens;
        usage.total_tokens += event.usage.total_tokens;
        break;
      case 'llm_retry':
        counted.retries += 1;
        break;
      case 'tool_call':
        counted.toolCalls += 1;
        break;
      case 'tool_error':
        counted.toolErrors += 1;
        break;
      case 'finish_rejected':
        counted.rejected += 1;
        break;
      default:
        break;
    }
  }
  const last = run.events.at(-1);
  const entries = run.events.map((event) => ({
    seq: event.seq,
    step: 'step' in event ? event.step : null,
    offset_ms: Math.max(0, Date.parse(event.ts) - origin) || 0,
    kind: event.kind,
    ...describeEvent(event),
  }));
  return {
    run_id: run.runId,
    specialist: start?.specialist ?? null,
    task: start?.task ?? null,
    entries,
    totals: {
      status: end?.status ?? 'running',
      steps: end?.steps ?? counted.steps,
      usage: end?.usage ?? usage,
      tool_calls: counted.toolCalls,
      tool_errors: counted.toolErrors,
      finish_rejected: counted.rejected,
      retries: counted.retries,
      duration_ms: end?.duration_ms ?? (last === undefined ? 0 : Date.parse(last.ts) - origin || 0),
    },
    torn: run.torn,
  };
}

/** The tone and one-line text of an event. */
export function describeEvent(event: RunEvent): { tone: TimelineTone; text: string } {
  switch (event.kind) {
    case 'run_start':
      return {
        tone: 'info',
        text: `${event.specialist} · model ${event.model} (${event.backend}) · ${preview(event.task, 80)}`,
      };
    case 'llm_request':
      return {
        tone: 'dim',
        text: `${event.final_turn ? 'final request (finish_task only)' : 'request'} · ${plural(event.messages, 'message')} · ${plural(event.tools.length, 'tool')}`,
      };
    case 'llm_response': {
      const calls = event.tool_calls.map((call) => call.name).join(', ');
      const said = event.content.trim() === '' ? '' : ` "${preview(event.content, 80)}"`;
      return {
        tone: 'dim',
        text: `model${said} → ${calls === '' ? 'no tool call' : calls} · ${plural(event.usage.total_tokens, 'token')} · ${event.latency_ms} ms`,
      };
    }
    case 'llm_retry':
      return {
        tone: 'warn',
        text: `↻ retry ${event.attempt} in ${event.delay_ms} ms: ${preview(event.reason)}`,
      };
    case 'compaction':
      return {
        tone: 'warn',
        text: `⇣ compacted: ${describeCompaction(event)}`,
      };
    case 'run_stuck':
      return {
        tone: 'warn',
        text: `⟳ stuck: ${describeStuck(event)}${event.action === 'warned' ? '; the model was told' : '; the run ends'}`,
      };
    case 'model_quirk':
      return { tone: 'warn', text: `⚑ ${event.note} ${event.quirk.replace(/_/g, ' ')}: ${event.detail}` };
    case 'reasoning_cut':
      return {
        tone: 'warn',
        text: `✂ reasoning cut at ${event.reasoning_chars} characters (budget ${event.budget_tokens} tokens)${
          event.think_after === undefined ? '' : `; asked again at think ${event.think_after}`
        }`,
      };
    case 'tool_call_recovered':
      return {
        tone: 'warn',
        text: `⚑ ${describeRecovered(event)}`,
      };
    case 'text_fallback':
      return { tone: 'warn', text: `plain-text answer taken as the result: ${preview(event.content)}` };
    case 'tool_call':
      return { tone: 'call', text: `→ ${event.tool} ${preview(event.arguments)}` };
    case 'tool_started':
      return { tone: 'dim', text: `▸ ${event.tool} started (${event.effect})` };
    case 'tool_result':
      return {
        tone: event.resumed === 'unknown' ? 'warn' : 'ok',
        text: `${event.resumed === 'unknown' ? '?' : '✓'} ${preview(event.result)}`,
      };
    case 'step_end':
      return {
        tone: 'dim',
        text: `step ${event.step} ended${event.cached_tokens === undefined ? '' : ` · ${plural(event.cached_tokens, 'cached token')}`}`,
      };
    case 'run_resumed':
      return { tone: 'info', text: `↺ ${describeResumed(event)}` };
    case 'steer_message':
      return {
        tone: 'warn',
        text: `✉ ${event.mode === 'interrupt' ? 'interrupt' : 'steer'} after step ${event.after_step} (${event.channel}): ${preview(event.text, 80)}`,
      };
    case 'approval_requested':
      return {
        tone: 'warn',
        text: `? ${event.approval_id} asks: ${event.argv === undefined ? `${event.tool}${event.path === undefined ? '' : ` ${showText(event.path)}`}` : showArgv(event.argv)} (${event.rule}; ${event.on_approval})`,
      };
    case 'approval_decided':
      return {
        tone: event.state === 'approved' ? 'ok' : 'warn',
        text: `${event.state === 'approved' ? '✓' : '✗'} ${event.approval_id} ${event.state} (${event.channel}${event.by === undefined ? '' : `: ${showText(event.by)}`}; ${event.scope}${event.pattern === undefined ? '' : ` ${showText(event.pattern)}`})${event.message === undefined ? '' : `: ${preview(event.message, 80)}`}`,
      };
    case 'run_paused':
      return { tone: 'warn', text: `⏸ paused after step ${event.step} (${event.channel})` };
    case 'run_unpaused':
      return { tone: 'info', text: `▶ continued (${event.channel})` };
    case 'tool_error':
      return { tone: 'error', text: `✗ ${event.tool} ${event.reason}: ${preview(event.error)}` };
    case 'security_event':
      return { tone: 'error', text: `⛔ ${event.tool}: ${event.event_type} (${event.rule})` };
    case 'finish_rejected':
      return { tone: 'warn', text: `✗ finish_task rejected (${event.reason}): ${preview(event.message)}` };
    case 'finish_gate_passed':
      return { tone: 'ok', text: `✓ finish gate: ${preview(event.message)}` };
    case 'run_end': {
      const tokens = event.usage.total_tokens > 0 ? ` · ${plural(event.usage.total_tokens, 'token')}` : '';
      const error = event.error === null ? '' : ` · ${event.error.code}: ${preview(event.error.message)}`;
      return {
        tone: event.status === 'succeeded' ? 'ok' : 'error',
        text: `${event.status} · ${plural(event.steps, 'step')}${tokens} · ${(event.duration_ms / 1000).toFixed(2)} s${error}`,
      };
    }
  }
}

/** What a `run_resumed` line says, in one line: where it stopped, what drifted, what was settled. */
export function describeResumed(event: Extract<RunEvent, { kind: 'run_resumed' }>): string {
  const drift =
    event.drift.length === 0
      ? ''
      : ` · ${plural(event.drift.length, 'path')} changed: ${preview(event.drift.join(', '), 80)}`;
  const settled = event.in_flight.map((call) => `${call.tool} ${call.action}`).join(', ');
  return `resumed after ${event.previous_status} (line ${event.from_seq})${event.pid === undefined ? '' : ` by process ${event.pid}`}${
    event.turn_asked_again ? ' · the unanswered turn is asked again' : ''
  }${settled === '' ? '' : ` · in flight: ${settled}`}${drift}${event.forced ? ' · forced' : ''}${
    event.model === undefined ? '' : ` · ${event.model} on ${event.backend}`
  }`;
}

/**
 * One line of at most `max` characters, with every control character made visible: a steer
 * message, a model's text or a tool's output printed to a terminal must not move its cursor.
 */
export function preview(text: string, max = PREVIEW): string {
  const flat = showText(text.replace(/\s+/g, ' ').trim());
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
