import { describeCompaction } from '../../../domain/describe-compaction.ts';
import { describeStuck } from '../../../application/run/stuck-watch.ts';
import { describeResumed } from '../../../application/replay/replay-timeline.ts';
import { describeRecovered } from '../../../domain/recovered-calls.ts';
import type { RunEvent } from '../../../domain/run-events.ts';
import { showArgv, showText } from '../../../domain/show-argv.ts';
import { diffStat } from '../../../domain/unified-diff.ts';
import { type SafeHtml, html } from './html.ts';
import { clip, duration, statusBadge } from './layout.ts';
import { toolArguments } from './tool-arguments.ts';
import { plural } from '../../../domain/words.ts';

/** How much of one tool result or argument list a page shows; the runlog has all of it. */
const SHOWN_CHARS = 8 * 1024;
/** Results up to this many lines are shown open; longer ones fold. */
const OPEN_LINES = 12;

/** The timeline's items for the events after `afterSeq`, one `<li>` each (none for a few kinds). */
export function timelineItems(events: readonly RunEvent[], afterSeq = 0): SafeHtml {
  const parts: SafeHtml[] = [];
  for (const event of events) if (event.seq > afterSeq) parts.push(item(event));
  return html`${parts}`;
}

/** The model profile a run used (SPEC §16), folded: the globs, the think level sent, the settings. */
function profileOf(event: Extract<RunEvent, { kind: 'run_start' }>): SafeHtml | string {
  const profile = event.profile;
  if (profile === undefined) return '';
  const settings = Object.entries(profile.settings)
    .map(([key, value]) => `${key}: ${String(value)}`)
    .join(', ');
  const name = profile.matched.length === 0 ? 'none' : profile.matched.join(' over ');
  return html`<details class="profile"><summary>Profile ${name}${
    profile.think_sent === undefined ? '' : ` · think ${profile.think_sent}`
  }</summary><p class="meta">${settings === '' ? 'the server decides' : settings}${
    profile.source === undefined ? '' : ` · from ${profile.source}`
  }</p></details>`;
}

function li(event: RunEvent, tone: string, body: SafeHtml): SafeHtml {
  return html`<li id="e${event.seq}" class="${tone}" data-kind="${event.kind}">${body}</li>\n`;
}

function item(event: RunEvent): SafeHtml {
  switch (event.kind) {
    case 'run_start':
      return li(
        event,
        '',
        html`<span class="kind">Started</span> <span class="meta">${event.specialist} · ${event.model} (${event.backend}) · at most ${plural(event.max_steps, 'step')}</span>${profileOf(event)}<pre>${clip(event.task, SHOWN_CHARS)}</pre>`,
      );
    case 'llm_request':
      return li(
        event,
        'step',
        event.final_turn
          ? html`Final turn: the model is asked to report`
          : html`Step ${event.step} <span class="meta">· ${event.messages} messages</span>`,
      );
    case 'llm_response': {
      const usage = html`<span class="meta">${plural(event.usage.total_tokens, 'token')} · ${duration(event.latency_ms)}${
        event.attempts > 1 ? ` · ${event.attempts} attempts` : ''
      }</span>`;
      // Reasoning is folded: it is how the model got there, not what it said (SPEC §16).
      const reasoning = event.reasoning
        ? html`<details class="reasoning"><summary>Reasoning${
            event.reasoning_tokens === undefined ? '' : ` (${plural(event.reasoning_tokens, 'token')})`
          }</summary><pre class="text">${clip(event.reasoning, SHOWN_CHARS)}</pre></details>`
        : '';
      return li(
        event,
        '',
        event.content.trim() === ''
          ? html`<span class="kind">Model</span> ${usage}${reasoning}`
          : html`<span class="kind">Model</span> ${usage}${reasoning}<pre class="text">${clip(event.content, SHOWN_CHARS)}</pre>`,
      );
    }
    case 'llm_retry':
      return li(
        event,
        'warn',
        html`<span class="kind">Retry ${event.attempt}</span> <span class="meta">in ${duration(event.delay_ms)}</span>: ${event.reason}`,
      );
    case 'compaction':
      return li(event, 'warn', html`<span class="kind">Compacted</span> ${describeCompaction(event)}`);
    case 'run_stuck':
      return li(
        event,
        'warn',
        html`<span class="kind">Stuck</span> ${describeStuck(event)}${event.action === 'warned' ? ': the model was told' : ': the run ends'}`,
      );
    case 'model_quirk':
      return li(
        event,
        'warn',
        html`<span class="kind">${event.quirk.replace(/_/g, ' ')}</span> <span class="meta">${event.note}</span> ${event.detail}`,
      );
    case 'reasoning_cut':
      return li(
        event,
        'warn',
        html`<span class="kind">Reasoning cut</span> <span class="meta">at ${event.reasoning_chars} characters, budget ${plural(event.budget_tokens, 'token')}</span>${
          event.think_after === undefined ? '' : `: asked again at think ${event.think_after}`
        }`,
      );
    case 'tool_call_recovered':
      return li(
        event,
        'warn',
        html`<span class="kind">Recovered ${plural(event.tool_calls.length, 'tool call')}</span> ${describeRecovered(event).replace(/^recovered \S+ tool calls? /, '')}`,
      );
    case 'text_fallback':
      return li(
        event,
        'warn',
        html`<span class="kind">Plain-text answer</span>, taken as the result<pre>${clip(event.content, SHOWN_CHARS)}</pre>`,
      );
    case 'tool_call':
      return li(
        event,
        '',
        html`<span class="kind">→ ${event.tool}</span> <span class="meta">${event.call_id}</span>${toolArguments(event.arguments, SHOWN_CHARS)}`,
      );
    case 'tool_started':
      return li(
        event,
        '',
        html`<span class="kind">▸ ${event.tool}</span> <span class="meta">started · ${event.effect}</span>`,
      );
    case 'step_end':
      return li(
        event,
        '',
        html`<span class="meta">Step ${event.step} ended${
          event.cached_tokens === undefined ? '' : ` · ${plural(event.cached_tokens, 'cached token')}`
        }</span>`,
      );
    case 'run_resumed':
      return li(event, 'warn', html`<span class="kind">Resumed</span> ${describeResumed(event)}`);
    case 'steer_message':
      return li(
        event,
        'warn',
        html`<span class="kind">✉ ${event.mode === 'interrupt' ? 'Interrupted' : 'Steered'}</span> <span class="meta">after step ${event.after_step} · via ${event.channel}</span><pre>${clip(event.text, SHOWN_CHARS)}</pre>`,
      );
    case 'approval_requested':
      return li(
        event,
        'warn',
        html`<span class="kind">? Approval asked</span> <span class="meta">${event.approval_id} · ${event.rule} · ${event.on_approval}</span><pre>${event.argv === undefined ? `${event.tool}${event.path === undefined ? '' : ` ${showText(event.path)}`}` : showArgv(event.argv)}</pre>`,
      );
    case 'approval_decided':
      return li(
        event,
        event.state === 'approved' ? 'good' : 'warn',
        html`<span class="kind">${event.state === 'approved' ? '✓ Approved' : event.state === 'denied' ? '✗ Denied' : event.state === 'expired' ? '⌛ Expired' : '✗ Cancelled'}</span> <span class="meta">${event.approval_id} · via ${event.channel}${event.by === undefined ? '' : ` (${event.by})`} · ${event.scope}${event.pattern === undefined ? '' : ` · ${event.pattern}`}</span>${event.message === undefined ? '' : html`<pre>${clip(event.message, SHOWN_CHARS)}</pre>`}`,
      );
    case 'run_paused':
      return li(
        event,
        'warn',
        html`<span class="kind">⏸ Paused</span> <span class="meta">after step ${event.step} · via ${event.channel}</span>`,
      );
    case 'run_unpaused':
      return li(
        event,
        'warn',
        html`<span class="kind">▶ Continued</span> <span class="meta">via ${event.channel}</span>`,
      );
    case 'tool_result':
      return li(
        event,
        'good',
        html`<span class="kind">✓ ${event.tool}</span> <span class="meta">${duration(event.duration_ms)}</span>${
          event.diff ? diffBlock(event.diff) : ''
        }${
          event.kept === undefined
            ? ''
            : html`<p class="meta">Cut to fit the model's window: <a href="/runs/${event.run_id}/outputs/${event.call_id}">the whole output</a> (${plural(event.kept.chars, 'character')})</p>`
        }${resultBlock(event.result)}`,
      );
    case 'tool_error':
      return li(
        event,
        'bad',
        html`<span class="kind">✗ ${event.tool}</span> <span class="meta">${event.reason} · ${duration(event.duration_ms)}</span><pre>${clip(event.error, SHOWN_CHARS)}</pre>`,
      );
    case 'security_event':
      return li(
        event,
        'bad',
        html`<span class="kind">⛔ Security: ${event.event_type}</span> <span class="meta">${event.tool} · rule ${event.rule}</span>${
          event.requested === undefined
            ? ''
            : html`<pre>requested: ${clip(String(event.requested), 1000)}${
                event.resolved === undefined ? '' : `\nresolved: ${clip(String(event.resolved), 1000)}`
              }</pre>`
        }`,
      );
    case 'finish_rejected':
      return li(
        event,
        'warn',
        html`<span class="kind">finish_task rejected</span> <span class="meta">${event.reason}</span><pre>${clip(event.message, SHOWN_CHARS)}</pre>`,
      );
    case 'finish_gate_passed':
      return li(
        event,
        'good',
        html`<span class="kind">✓ Finish gate passed</span> <span class="meta">${clip(event.message, SHOWN_CHARS)}</span>`,
      );
    case 'run_end':
      return li(
        event,
        event.status === 'succeeded' ? 'good' : 'bad',
        html`<span class="kind">Ended</span> ${statusBadge(event.status)} <span class="meta">after ${plural(event.steps, 'step')} · ${plural(event.usage.total_tokens, 'token')} · ${duration(event.duration_ms)}</span>${
          event.error ? html`<pre>${event.error.code}: ${event.error.message}</pre>` : ''
        }${event.payload ? html`<h2>Payload</h2><pre class="payload">${pretty(JSON.stringify(event.payload))}</pre>` : ''}`,
      );
  }
}

/** A unified diff, each line a block that keeps its `+`, `-` or ` ` so the change reads without colour. */
export function diffBlock(diff: string): SafeHtml {
  const { added, removed, cut } = diffStat(diff);
  const lines = diff.endsWith('\n') ? diff.slice(0, -1).split('\n') : diff.split('\n');
  const rows = lines.map((line) => {
    const kind =
      line.startsWith('+++') || line.startsWith('---')
        ? 'file'
        : line.startsWith('@@')
          ? 'hunk'
          : line.startsWith('+')
            ? 'add'
            : line.startsWith('-')
              ? 'del'
              : 'ctx';
    return html`<span class="${kind}">${line === '' ? ' ' : line}</span>`;
  });
  return html`<div class="meta">+${added} −${removed}${cut ? ' (the diff was cut in the runlog)' : ''}</div><pre class="diff" aria-label="Diff: ${added} lines added, ${removed} removed">${rows}</pre>`;
}

function resultBlock(result: string): SafeHtml {
  const shown = clip(result, SHOWN_CHARS);
  const lines = shown.split('\n').length;
  return lines <= OPEN_LINES
    ? html`<pre class="result">${shown}</pre>`
    : html`<details><summary>Result (${result.split('\n').length} lines)</summary><pre class="result">${shown}</pre></details>`;
}

/** JSON shown indented when it parses; as sent otherwise (it is the model's text). */
function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
