import type { RunEvent } from '../../domain/run-events.ts';
import { FINISH_TOOL } from '../run/tool-dispatch.ts';
import { sortTestResultLines } from './test-result-order.ts';

/** What one tool call came to in a run. */
export interface CallOutcome {
  readonly step: number;
  /** The call's position among the calls of its step, from 0. */
  readonly index: number;
  readonly call_id: string;
  readonly tool: string;
  /** `accepted`: a finish_task that ended the run; `none`: no outcome was logged (the run stopped). */
  readonly kind: 'result' | 'error' | 'rejected' | 'accepted' | 'none';
  readonly text: string;
}

/** One way the re-run differs from the original. Texts are excerpts around the first difference. */
export interface ReplayDifference {
  readonly what: 'tool_result' | 'missing' | 'extra' | 'status' | 'payload';
  readonly step: number | null;
  readonly tool: string | null;
  readonly call_id: string | null;
  readonly original: string;
  readonly replayed: string;
}

/** The result of comparing a re-run with its original. */
export interface ReplayComparison {
  readonly identical: boolean;
  /** How many tool calls were compared (the original's and the re-run's, paired). */
  readonly compared: number;
  readonly differences: readonly ReplayDifference[];
}

/** Rewrites text before comparing, e.g. to mask paths and durations that differ by nature. */
export type Normalize = (text: string, side: 'original' | 'replayed') => string;

const EXCERPT_CHARS = 240;

/** Each tool call of a run with its outcome, in call order. */
export function collectCallOutcomes(events: readonly RunEvent[]): CallOutcome[] {
  const outcomes: { -readonly [K in keyof CallOutcome]: CallOutcome[K] }[] = [];
  const perStep = new Map<number, number>();
  const pending = (step: number, callId: string) =>
    outcomes.findLast((outcome) => outcome.step === step && outcome.call_id === callId);
  for (const event of events) {
    switch (event.kind) {
      case 'tool_call': {
        // Dispatched again on resuming (SPEC §18: a call parked for approval, an idempotent one
        // the process died in): one call, whose outcome is the one the resumed run logged.
        if (pending(event.step, event.call_id)?.kind === 'none') break;
        const index = perStep.get(event.step) ?? 0;
        perStep.set(event.step, index + 1);
        outcomes.push({
          step: event.step,
          index,
          call_id: event.call_id,
          tool: event.tool,
          kind: 'none',
          text: '',
        });
        break;
      }
      case 'tool_result':
        Object.assign(pending(event.step, event.call_id) ?? {}, { kind: 'result', text: event.result });
        break;
      case 'tool_error':
        Object.assign(pending(event.step, event.call_id) ?? {}, {
          kind: 'error',
          text: `${event.reason}: ${event.error}`,
        });
        break;
      case 'finish_rejected':
        Object.assign(pending(event.step, event.call_id) ?? {}, {
          kind: 'rejected',
          text: `${event.reason}: ${event.message}`,
        });
        break;
      case 'run_end': {
        // An accepted finish_task logs no line of its own: the run_end with its payload is its result.
        const last = outcomes.at(-1);
        if (event.payload !== null && last?.tool === FINISH_TOOL && last.kind === 'none') {
          last.kind = 'accepted';
        }
        break;
      }
      default:
        break;
    }
  }
  return outcomes;
}

/**
 * Pairs the original run's tool outcomes with the re-run's by step and call order, and lists
 * every difference, plus a different final status or payload. Timestamps, durations and run ids
 * are not compared: only what the tools answered and how the run ended.
 */
export function compareReplay(
  original: readonly RunEvent[],
  replayed: readonly RunEvent[],
  normalize: Normalize = (text) => text,
): ReplayComparison {
  const before = collectCallOutcomes(original);
  const after = new Map(collectCallOutcomes(replayed).map((outcome) => [keyOf(outcome), outcome]));
  const differences: ReplayDifference[] = [];
  for (const outcome of before) {
    const match = after.get(keyOf(outcome));
    after.delete(keyOf(outcome));
    const where = { step: outcome.step, tool: outcome.tool, call_id: outcome.call_id };
    if (match === undefined) {
      differences.push({
        what: 'missing',
        ...where,
        original: excerpt(show(outcome, normalize(outcome.text, 'original'))),
        replayed: '(not run: the re-run ended before this call)',
      });
      continue;
    }
    const a = show(outcome, normalize(outcome.text, 'original'));
    const b = show(match, normalize(match.text, 'replayed'));
    if (a !== b || outcome.tool !== match.tool) {
      differences.push({ what: 'tool_result', ...where, ...excerpts(a, b) });
    }
  }
  for (const extra of after.values()) {
    differences.push({
      what: 'extra',
      step: extra.step,
      tool: extra.tool,
      call_id: extra.call_id,
      original: '(not in the original run)',
      replayed: excerpt(show(extra, normalize(extra.text, 'replayed'))),
    });
  }
  differences.push(...compareEnds(original, replayed, normalize));
  return {
    identical: differences.length === 0,
    compared: before.length + after.size,
    differences,
  };
}

/**
 * A normaliser for a re-run in another workspace: each side's workspace path and run id become
 * placeholders, durations (`1.2s`, `340 ms`) and ISO timestamps are masked, and `cargo test`'s
 * result lines are put in name order (libtest prints them as its threads finish).
 */
export function replayNormalizer(sides: {
  readonly original: { readonly workspace: string | null; readonly runId: string };
  readonly replayed: { readonly workspace: string | null; readonly runId: string };
}): Normalize {
  return (text, side) => {
    const { workspace, runId } = sides[side];
    const names = new Map<string, string>();
    if (workspace !== null && workspace !== '') names.set(workspace, '<workspace>');
    if (runId !== '') names.set(runId, '<run_id>');
    // One pass, longest first, so a placeholder is never rewritten by the next replacement.
    const pattern = [...names.keys()]
      .sort((a, b) => b.length - a.length)
      .map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('|');
    const out =
      pattern === '' ? text : text.replace(new RegExp(pattern, 'g'), (name) => names.get(name) ?? name);
    return sortTestResultLines(out)
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?/g, '<time>')
      .replace(/(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|s)\b/g, '<duration>');
  };
}

function compareEnds(
  original: readonly RunEvent[],
  replayed: readonly RunEvent[],
  normalize: Normalize,
): ReplayDifference[] {
  const endOf = (events: readonly RunEvent[]) => events.findLast((event) => event.kind === 'run_end');
  const a = endOf(original);
  const b = endOf(replayed);
  const statusOf = (end: typeof a) =>
    end?.kind !== 'run_end'
      ? 'running (no run_end)'
      : `${end.status}${end.error === null ? '' : ` (${end.error.code}: ${end.error.message})`}`;
  const none = { step: null, tool: null, call_id: null };
  const out: ReplayDifference[] = [];
  if (a?.kind !== b?.kind || (a?.kind === 'run_end' && b?.kind === 'run_end' && a.status !== b.status)) {
    out.push({ what: 'status', ...none, original: excerpt(statusOf(a)), replayed: excerpt(statusOf(b)) });
  } else if (a?.kind === 'run_end' && b?.kind === 'run_end') {
    const pa = normalize(JSON.stringify(a.payload), 'original');
    const pb = normalize(JSON.stringify(b.payload), 'replayed');
    if (pa !== pb) out.push({ what: 'payload', ...none, ...excerpts(pa, pb) });
  }
  return out;
}

function keyOf(outcome: CallOutcome): string {
  return `${outcome.step}:${outcome.index}`;
}

function show(outcome: CallOutcome, text: string): string {
  switch (outcome.kind) {
    case 'accepted':
      return 'accepted: the run ended';
    case 'none':
      return '(no outcome logged)';
    default:
      return `${outcome.kind}: ${text}`;
  }
}

/** Both texts cut to the same window around their first difference, so the change is in view. */
export function excerpts(a: string, b: string, max = EXCERPT_CHARS): { original: string; replayed: string } {
  let at = 0;
  while (at < a.length && at < b.length && a[at] === b[at]) at += 1;
  const start = Math.max(0, at - Math.floor(max / 4));
  return { original: excerpt(a, start, max), replayed: excerpt(b, start, max) };
}

function excerpt(text: string, start = 0, max = EXCERPT_CHARS): string {
  const body = text.slice(start, start + max);
  return `${start > 0 ? '…' : ''}${body}${start + max < text.length ? '…' : ''}`;
}
