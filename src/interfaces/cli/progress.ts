import { describeCompaction } from '../../domain/describe-compaction.ts';
import { describeStuck } from '../../application/run/stuck-watch.ts';
import { describeRecovered } from '../../domain/recovered-calls.ts';
import type { RunObserver } from '../../application/ports.ts';
import { FINISH_TOOL } from '../../application/run/tool-dispatch.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { showArgv, showText } from '../../domain/show-argv.ts';
import { diffStat } from '../../domain/unified-diff.ts';
import { plural } from '../../domain/words.ts';
import type { OutputStream } from './io.ts';
import type { Style } from './style.ts';

const ARG_PREVIEW = 160;
const RESULT_PREVIEW = 200;
const REASONING_PREVIEW = 120;

/** How much of the model's reasoning progress shows: one dim line per turn, or all of it. */
export interface ProgressOptions {
  readonly showReasoning?: boolean;
}

/** Shows a run as it happens on stderr: steps, the model's streamed text, each tool call and its outcome. */
export class ProgressReporter implements RunObserver {
  readonly #out: OutputStream;
  readonly #style: Style;
  #maxSteps = 0;
  #midLine = false;
  /** Whether the final, finish-only turn has been asked for (SPEC §3). */
  #finalTurn = false;
  /** How the model answered the final turn: an accepted finish_task, plain text, or not at all. */
  #finalReport: 'finish_task' | 'rejected' | 'text' | undefined;
  /** Whether the `⟳ stuck … ending the run` line was shown, so run_end does not say it again. */
  #stuckShown = false;

  readonly #showReasoning: boolean;

  constructor(out: OutputStream, style: Style, options: ProgressOptions = {}) {
    this.#out = out;
    this.#style = style;
    this.#showReasoning = options.showReasoning === true;
  }

  onText(text: string): void {
    this.#out.write(this.#style.dim(text));
    this.#midLine = !text.endsWith('\n');
  }

  onToolCallStarted(): void {}

  /** A run starts, or goes on: its step limit, and nothing of an earlier run's end carried over. */
  #begin(maxSteps: number): void {
    this.#maxSteps = maxSteps;
    this.#finalTurn = false;
    this.#finalReport = undefined;
    this.#stuckShown = false;
  }

  onEvent(event: RunEvent): void {
    const s = this.#style;
    switch (event.kind) {
      case 'run_start':
        this.#begin(event.max_steps);
        this.#line(
          `${s.bold('fabric')} run ${event.run_id} · ${event.specialist} · model ${event.model} (${event.backend})`,
        );
        if (event.model_reason) this.#line(s.dim(`  model: ${event.model_reason}`));
        if (event.window_note) this.#line(s.yellow(`  window: ${event.window_note}`));
        break;
      case 'run_resumed': {
        // A run going on (SPEC §18): its step limit as it goes on, and what changed meanwhile.
        this.#begin(event.max_steps);
        const model = event.model === undefined ? '' : ` · model ${event.model} (${event.backend})`;
        this.#line(
          `${s.bold('fabric')} run ${event.run_id} goes on (it was ${event.previous_status})${model}`,
        );
        if (event.model_reason) this.#line(s.dim(`  model: ${event.model_reason}`));
        if (event.drift.length > 0)
          this.#line(s.yellow(`  changed while it was stopped: ${event.drift.join(', ')}`));
        break;
      }
      case 'llm_request':
        if (event.final_turn) this.#finalTurn = true;
        this.#line(
          s.cyan(event.final_turn ? `[final] asking for a report` : `[${event.step}/${this.#maxSteps}]`),
        );
        break;
      case 'llm_retry':
        this.#line(s.yellow(`  ↻ retry ${event.attempt} in ${event.delay_ms} ms: ${event.reason}`));
        break;
      case 'compaction':
        this.#line(s.yellow(`  ⇣ compacted: ${describeCompaction(event)}`));
        break;
      case 'run_stuck':
        if (event.action === 'stopped') this.#stuckShown = true;
        this.#line(
          s.yellow(
            `  ⟳ stuck: ${describeStuck(event)}${event.action === 'warned' ? '; telling the model' : '; ending the run'}`,
          ),
        );
        break;
      case 'model_quirk':
        this.#line(s.yellow(`  ⚑ ${event.quirk.replace(/_/g, ' ')}: ${event.detail}`));
        break;
      case 'reasoning_cut':
        this.#line(
          s.yellow(
            `  ✂ reasoning cut past ${plural(event.budget_tokens, 'token')}${
              event.think_after === undefined
                ? '; asking again'
                : `; asking again at think ${event.think_after}`
            }`,
          ),
        );
        break;
      case 'tool_call_recovered':
        this.#line(s.yellow(`  ⚑ ${describeRecovered(event)}`));
        break;
      case 'tool_call':
        // An accepted finish_task ends the run, so the last one not rejected is the report.
        if (this.#finalTurn && event.tool === FINISH_TOOL) this.#finalReport = 'finish_task';
        this.#line(`  → ${event.tool} ${s.dim(preview(event.arguments, ARG_PREVIEW))}`);
        break;
      case 'tool_result':
        if (!event.diff && event.result.trim().includes('\n')) {
          // Output of several lines keeps its lines (compiler errors, listings), indented and bounded.
          this.#line(`  ${s.green('✓')} ${event.tool} ${s.dim(`(${event.duration_ms} ms)`)}`);
          for (const line of resultLines(event.result)) this.#line(`    ${s.dim(line)}`);
          break;
        }
        // A file change reads best as its size and place; the full diff is in the runlog.
        this.#line(
          `  ${s.green('✓')} ${event.tool} ${
            event.diff ? diffSummary(event.diff) : s.dim(preview(event.result, RESULT_PREVIEW))
          } ${s.dim(`(${event.duration_ms} ms)`)}`,
        );
        break;
      case 'tool_error':
        this.#line(`  ${s.red('✗')} ${event.tool}: ${preview(event.error, RESULT_PREVIEW)}`);
        break;
      case 'security_event':
        this.#line(`  ${s.red('⛔')} ${event.event_type} (${event.rule})`);
        break;
      // A person's approval (SPEC §19): the prompt, if any, follows on a terminal.
      case 'approval_requested':
        if (event.on_approval !== 'wait' && event.on_approval !== 'park') break;
        this.#line(
          s.yellow(
            `  ? ${event.argv === undefined ? event.tool : showArgv(event.argv)} needs approval ${event.approval_id}${
              event.on_approval === 'park'
                ? ': the run parks until it is answered (fabric approvals answer)'
                : ''
            }`,
          ),
        );
        break;
      case 'approval_decided':
        this.#line(
          `  ${event.state === 'approved' ? s.green('✓') : s.yellow('✗')} ${event.approval_id} ${event.state} (${event.channel}${
            event.scope === 'once'
              ? ''
              : `, ${event.scope}${event.pattern === undefined ? '' : `: ${showText(event.pattern)}`}`
          })`,
        );
        break;
      case 'finish_rejected':
        if (this.#finalTurn) this.#finalReport = 'rejected';
        this.#line(`  ${s.yellow('✗ finish_task rejected')}: ${preview(event.message, RESULT_PREVIEW)}`);
        break;
      case 'finish_gate_passed':
        this.#line(`  ${s.green('✓ finish gate')}: ${preview(event.message, RESULT_PREVIEW)}`);
        break;
      case 'text_fallback':
        if (this.#finalTurn) this.#finalReport = 'text';
        this.#line(s.yellow('  the model answered in plain text; taking it as the result'));
        break;
      case 'run_end': {
        const mark =
          event.status === 'succeeded'
            ? s.green('✔')
            : event.status === 'cancelled' ||
                event.status === 'max_steps' ||
                event.status === 'awaiting_approval'
              ? s.yellow('■')
              : s.red('✘');
        const tokens = event.usage.total_tokens > 0 ? ` · ${plural(event.usage.total_tokens, 'token')}` : '';
        const how =
          event.status === 'max_steps'
            ? this.#stoppedAtLimit(event.steps)
            : `${event.status} after ${plural(event.steps, 'step')}`;
        this.#line(`${mark} ${how}${tokens} · ${(event.duration_ms / 1000).toFixed(1)} s`);
        // A stuck run's why was just shown on its `⟳ stuck` line; once is enough.
        if (event.error && !(event.error.code === 'run_stuck' && this.#stuckShown)) {
          this.#line(s.red(`  ${event.error.message}`));
        }
        break;
      }
      case 'llm_response':
        if (event.reasoning) {
          // Reasoning is never the answer (SPEC §16): one dim line a turn, whole with --show-reasoning.
          const tokens =
            event.reasoning_tokens === undefined ? '' : ` (${plural(event.reasoning_tokens, 'token')})`;
          const text = this.#showReasoning
            ? event.reasoning.trim()
            : preview(event.reasoning, REASONING_PREVIEW);
          this.#line(s.dim(`  ∴ thought${tokens}: ${text}`));
        }
        break;
    }
  }

  /**
   * At the limit the loop makes one more, finish-only turn for the report (SPEC §3), so "after 2
   * steps" with --max-steps 1 would read as if the limit had been overrun; and the report is
   * claimed only when the model gave one.
   */
  #stoppedAtLimit(steps: number): string {
    const worked = this.#finalTurn ? steps - 1 : steps;
    const stopped =
      worked < this.#maxSteps
        ? `max_steps: the time budget ran out after ${plural(worked, 'step')}`
        : `max_steps: stopped at the limit of ${plural(this.#maxSteps, 'step')}`;
    switch (this.#finalReport) {
      case 'finish_task':
        return `${stopped}; the model reported what is left`;
      case 'text':
        return `${stopped}; the model answered in plain text, which is the summary`;
      case 'rejected':
        return `${stopped}; the model's report (finish_task) was rejected, so the result only says the run stopped`;
      case undefined:
        return `${stopped}; the model did not report (no finish_task), so the result only says the run stopped`;
    }
  }

  #line(text: string): void {
    if (this.#midLine) this.#out.write('\n');
    this.#midLine = false;
    this.#out.write(`${text}\n`);
  }
}

/** A diff as a short stat: `+3 −1 src/region.rs`, `(cut)` when the runlog holds only part of it. */
export function diffSummary(diff: string): string {
  const { added, removed, cut } = diffStat(diff);
  const file = /^\+\+\+ b\/(.*)$/m.exec(diff)?.[1] ?? '';
  return `+${added} −${removed} ${file}${cut ? ' (cut)' : ''}`.trimEnd();
}

const RESULT_LINES = 8;
const RESULT_LINE_WIDTH = 160;

/** A tool's output of several lines as at most RESULT_LINES lines, each cut at RESULT_LINE_WIDTH. */
function resultLines(text: string): string[] {
  const lines = text
    .replace(/\s+$/, '')
    .replace(/^\s*\n/, '')
    .split('\n');
  const shown = lines
    .slice(0, RESULT_LINES)
    .map((line) => (line.length > RESULT_LINE_WIDTH ? `${line.slice(0, RESULT_LINE_WIDTH)}…` : line));
  const more = lines.length - shown.length;
  return more > 0 ? [...shown, `… ${plural(more, 'more line')}`] : shown;
}

/** One line of at most `max` characters, with nothing in it a terminal acts on (ESC, BEL). */
function preview(text: string, max: number): string {
  const flat = showText(text.replace(/\s+/g, ' ').trim());
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
