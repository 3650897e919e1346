import type { DaemonStatus, DaemonTaskFigures } from '../../../application/daemon/daemon-status.ts';
import { showText } from '../../../domain/show-argv.ts';
import { plural } from '../../../domain/words.ts';

/** `fabric daemon status` for a person. */
export function formatStatus(status: DaemonStatus): string {
  const lines = [
    `${status.repo} · daemon ${status.daemon.running ? `running (pid ${status.daemon.pid})` : 'not running'}`,
  ];
  const figures = new Map(status.stats.tasks.map((task) => [`${task.change}\n${task.id}`, task]));
  for (const change of status.changes) {
    if (change.error !== undefined) {
      lines.push(`\n${change.id}: cannot be read: ${change.error}`);
      continue;
    }
    const waiting = change.awaiting_approval === 0 ? '' : `, ${change.awaiting_approval} awaiting approval`;
    lines.push(
      `\n${change.id}: ${change.done} done, ${change.pending} pending, ${change.blocked} blocked${waiting}`,
    );
    for (const task of change.tasks) {
      const mark = { done: '[x]', pending: '[ ]', blocked: '[!]', running: '[>]', awaiting_approval: '[?]' }[
        task.status
      ];
      const extra = [
        task.attempts > 0 ? plural(task.attempts, 'attempt') : '',
        task.commit === null ? '' : `commit ${task.commit.slice(0, 10)}`,
      ]
        .filter(Boolean)
        .join(', ');
      lines.push(`  ${mark} ${task.id} ${task.text}${extra === '' ? '' : `  (${task.status}; ${extra})`}`);
      if (task.approval !== undefined)
        lines.push(
          `      run ${task.approval.run_id} waits for approval ${task.approval.id}: \`${showText(task.approval.call)}\` — fabric approvals answer ${task.approval.id} approve (or deny)`,
        );
      const own = figures.get(`${task.change}\n${task.id}`);
      if (task.status === 'done' && own !== undefined) lines.push(`      ${figureLine(own)}`);
    }
  }
  const s = status.stats;
  const pct = (value: number | null) => (value === null ? '–' : `${Math.round(value * 100)}%`);
  lines.push(
    `\nattempts ${s.attempts}, tasks committed ${s.succeeded}, success rate ${pct(s.success_rate)}, first-attempt success ${pct(s.first_attempt_success_rate)}`,
  );
  for (const m of s.models) {
    lines.push(
      `model ${m.model}: ${plural(m.attempts, 'attempt')}, ${plural(m.succeeded, 'task')} done, success rate ${pct(m.success_rate)}`,
    );
  }
  if (s.seconds_per_task !== null)
    lines.push(`per task: ${s.seconds_per_task}s, ${plural(s.tokens_per_task ?? 0, 'token')}`);
  const b = status.backend;
  lines.push(
    `backend ${b.state}${b.last_ok === null ? '' : `, last ok ${b.last_ok}`}, failures ${b.failures}${b.backoff_s > 0 ? `, backing off ${b.backoff_s}s` : ''}`,
  );
  return `${lines.join('\n')}\n`;
}

/** `2 files, +9 −1, 3 tests passed, clippy warnings 0 → 1` (or why clippy has no figure). */
export function figureLine(figures: DaemonTaskFigures): string {
  const parts: string[] = [];
  if (figures.files_changed !== null) parts.push(plural(figures.files_changed, 'file'));
  if (figures.lines_added !== null || figures.lines_removed !== null)
    parts.push(`+${figures.lines_added ?? 0} −${figures.lines_removed ?? 0}`);
  if (figures.tests_passed !== null) parts.push(`${plural(figures.tests_passed, 'test')} passed`);
  parts.push(clippyText(figures));
  if (figures.preexisting_failures.length > 0)
    parts.push(`pre-existing failures (red at HEAD): ${figures.preexisting_failures.join(', ')}`);
  if (figures.flaky_tests.length > 0) parts.push(`flaky: ${figures.flaky_tests.join(', ')}`);
  return parts.join(', ');
}

/** Clippy's figures for a person: `clippy warnings 0 → 1`, or `clippy: –` and why. */
export function clippyText(figures: DaemonTaskFigures): string {
  const shown = (count: number | null) => (count === null ? '–' : String(count));
  const counts =
    figures.clippy_before === null && figures.clippy_after === null
      ? 'clippy warnings –'
      : `clippy warnings ${shown(figures.clippy_before)} → ${shown(figures.clippy_after)}`;
  return figures.clippy_note === null ? counts : `${counts} (${figures.clippy_note})`;
}
