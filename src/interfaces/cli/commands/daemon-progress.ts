import type { StampedDaemonEvent } from '../../../application/daemon/daemon-events.ts';
import { showText } from '../../../domain/show-argv.ts';
import { plural } from '../../../domain/words.ts';
import type { OutputStream } from '../io.ts';
import type { Logger } from '../logger.ts';
import type { Style } from '../style.ts';

const DIAGNOSTICS_LINES = 12;

/**
 * The daemon's events for a person, on stderr: which task, which attempt, how it went.
 * `failureShown`: the last attempt's failure is already on the screen (its run's end or its
 * validation), so a block does not print it a second time.
 */
export function daemonProgressLine(event: StampedDaemonEvent, s: Style, failureShown = false): string | null {
  switch (event.event) {
    case 'daemon_start':
      return `${s.bold('fabric daemon')} on ${event.repo} · ${event.changes.length === 0 ? 'every change' : event.changes.join(', ')} · max ${plural(event.max_attempts, 'attempt')} · ${event.once ? 'once' : `every ${event.interval_s}s`}`;
    case 'escalation':
      return [
        '  escalation by measurement (daemon.models: auto), best first:',
        ...event.models.map(
          (step, i) =>
            `    ${i + 1}. ${step.model}: ${step.measurement}${step.server === null ? '' : `, on ${step.server}`}`,
        ),
        ...event.left_out.map((out) => s.dim(`    left out: ${out.model}: ${out.why}`)),
      ].join('\n');
    case 'change_unreadable':
      return s.red(`✗ change ${event.change} cannot be read: ${event.message}`);
    case 'baseline':
      return event.ok
        ? s.dim(`  baseline of ${event.change} at ${event.commit.slice(0, 10)}: validation passes`)
        : s.yellow(
            `  baseline of ${event.change} at ${event.commit.slice(0, 10)}: ${
              event.failed_tests === null
                ? 'the build fails at HEAD'
                : `${plural(event.failed_tests.length, 'test')} fail at HEAD (pre-existing, not blamed on a task): ${event.failed_tests.join(', ')}`
            }`,
          );
    case 'task_start':
      return s.bold(
        `▶ ${event.task.change} ${event.task.id} ${event.task.text} — attempt ${event.attempt}${event.model === null ? '' : ` (${event.model})`}`,
      );
    case 'run_end':
      return `  run ${event.run_id} ended ${event.status}${event.error === null ? '' : `: ${event.error}`}`;
    case 'validation':
      return event.ok
        ? s.green(
            `  ✓ validated${event.tests_passed === null ? '' : ` (${plural(event.tests_passed, 'test')} passed)`}${
              event.preexisting.length === 0 ? '' : `; pre-existing failures: ${event.preexisting.join(', ')}`
            }`,
          )
        : s.red(
            `  ✗ validation failed${event.rerun ? ' (running it again before the attempt is spent)' : ''}: ${indent(event.summary ?? lastLines(event.report ?? '', DIAGNOSTICS_LINES)).trimStart()}`,
          );
    case 'task_resumed':
      return s.bold(
        `↻ ${event.task.change} ${event.task.id} ${event.task.text} — attempt ${event.attempt} goes on: ${
          event.after_approval === undefined
            ? `resuming run ${event.run_id} where the killed daemon left it`
            : `approval ${event.after_approval} answered; its edits brought back, run ${event.run_id} resumes`
        }`,
      );
    case 'task_parked':
      return s.yellow(
        `⏸ ${event.task.change} ${event.task.id}: run ${event.run_id} waits for approval of \`${showText(event.call)}\`; its edits set aside (${event.ref}), other changes go on.\n` +
          `  answer it: fabric approvals answer ${event.approval_id} approve (or deny), the viewer, or POST /v1/approvals/${event.approval_id}`,
      );
    case 'resume_refused':
      return s.yellow(
        `  ${event.task.change} ${event.task.id}: run ${event.run_id} is not resumed (${event.reason}); ${
          event.ref === undefined
            ? 'the attempt starts again'
            : `it is cancelled, and its edits are kept at ${event.ref} (git cherry-pick --no-commit ${event.ref} brings them back)`
        }`,
      );
    case 'task_retry':
      return s.yellow(`  ↻ ${event.task.change} ${event.task.id}: trying again with the failure as feedback`);
    case 'task_done':
      return s.green(
        `✓ ${event.task.change} ${event.task.id} committed ${event.task.commit?.slice(0, 10)} (${plural(event.task.attempts, 'attempt')}, ${event.seconds}s, ${plural(event.tokens, 'token')})`,
      );
    case 'task_blocked':
      return s.red(
        `✗ ${event.task.change} ${event.task.id} blocked after ${plural(event.task.attempts, 'attempt')}; tree restored to the last commit. ${
          failureShown
            ? 'Its last failure is above.'
            : `Last diagnostics:\n${indent(lastLines(event.diagnostics, DIAGNOSTICS_LINES))}`
        }`,
      );
    case 'task_cancelled':
      return s.yellow(`■ ${event.task.change} ${event.task.id} cancelled; tree restored to the last commit`);
    case 'change_stopped':
      return s.yellow(
        `  change ${event.change} stops at ${event.task} (${event.reason}); other changes go on`,
      );
    case 'backend_down': {
      // The servers asked and the fix the first time; one line a retry after that.
      const [headline, ...rest] = event.message.split('\n');
      const detail = event.failures === 1 && rest.length > 0 ? `\n${rest.join('\n')}` : '';
      return s.yellow(
        `… no model reachable (${headline}); no attempt spent; trying again in ${event.backoff_s}s (failure ${event.failures})${detail}`,
      );
    }
    case 'backend_up':
      return s.green('  model backend reachable again');
    case 'change_validated':
      return event.ok
        ? s.green(`✓ ${event.change}: every task done; openspec validate --strict passes`)
        : s.red(
            `✗ ${event.change}: every task done, but openspec validate --strict fails:\n${indent(lastLines(event.output, DIAGNOSTICS_LINES))}`,
          );
    case 'change_archived':
      return event.ok
        ? s.green(`✓ ${event.change} archived (openspec archive), committed ${event.commit?.slice(0, 10)}`)
        : s.red(
            `✗ ${event.change}: openspec archive failed; tree restored:\n${indent(lastLines(event.output, DIAGNOSTICS_LINES))}`,
          );
    case 'pass_end':
      return `pass done: ${event.done} done, ${event.pending} pending, ${event.blocked} blocked${
        event.awaiting_approval === 0 ? '' : `, ${event.awaiting_approval} awaiting approval`
      }`;
    case 'idle':
      return s.dim(`waiting ${event.next_scan_s}s before the next scan (Ctrl-C to stop)`);
    case 'daemon_stop':
      return `daemon stopped (${event.reason}); ${event.blocked} blocked${
        event.awaiting_approval === 0
          ? ''
          : `, ${event.awaiting_approval} awaiting approval (fabric approvals list; the next fabric daemon goes on with them once answered)`
      }`;
  }
}

/**
 * Writes each event: a progress line to `progress` (stderr, or the JSON log), and with `--json`
 * one JSON line on stdout.
 */
export function daemonEventWriter(
  stdout: OutputStream,
  progress: (line: string, event: StampedDaemonEvent) => void,
  style: Style,
  json: boolean,
) {
  // Tasks whose last attempt's failure (a failed run, a failed validation) was just printed.
  const shown = new Set<string>();
  return (event: StampedDaemonEvent) => {
    if (json) stdout.write(`${JSON.stringify(event)}\n`);
    const key =
      'task' in event && typeof event.task === 'object' ? `${event.task.change}\u0000${event.task.id}` : null;
    const failureShown = key !== null && shown.has(key);
    if (key !== null) {
      const failed =
        (event.event === 'run_end' && event.status !== 'succeeded') ||
        (event.event === 'validation' && !event.ok);
      if (failed) shown.add(key);
      else if (event.event !== 'task_retry') shown.delete(key);
    }
    const line = daemonProgressLine(event, style, failureShown);
    if (line !== null) progress(line, event);
  };
}

/** The daemon's progress as log lines: a failure is an error, a wait for the model a warning. */
export function daemonLogLine(logger: Logger) {
  return (text: string, event: StampedDaemonEvent) => {
    const line = text.trimStart();
    const fields = { run_id: 'run_id' in event ? event.run_id : undefined };
    if (FAILURES.has(event.event) || ('ok' in event && !event.ok)) logger.error(line, fields);
    else if (WARNINGS.has(event.event)) logger.warn(line, fields);
    else logger.info(line, fields);
  };
}

const FAILURES = new Set<StampedDaemonEvent['event']>(['change_unreadable', 'task_blocked']);
const WARNINGS = new Set<StampedDaemonEvent['event']>([
  'backend_down',
  'change_stopped',
  'resume_refused',
  'task_cancelled',
  'task_retry',
]);

function lastLines(text: string, count: number): string {
  const lines = text.trimEnd().split('\n');
  return lines.length <= count ? lines.join('\n') : ['…', ...lines.slice(-count)].join('\n');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
