import type { DaemonStatus } from '../../../application/daemon/daemon-status.ts';

/** `fabric daemon status` for a person. */
export function formatStatus(status: DaemonStatus): string {
  const lines = [
    `${status.repo} · daemon ${status.daemon.running ? `running (pid ${status.daemon.pid})` : 'not running'}`,
  ];
  for (const change of status.changes) {
    if (change.error !== undefined) {
      lines.push(`\n${change.id}: cannot be read: ${change.error}`);
      continue;
    }
    lines.push(`\n${change.id}: ${change.done} done, ${change.pending} pending, ${change.blocked} blocked`);
    for (const task of change.tasks) {
      const mark = { done: '[x]', pending: '[ ]', blocked: '[!]', running: '[>]' }[task.status];
      const extra = [
        task.attempts > 0 ? `${task.attempts} attempt(s)` : '',
        task.commit === null ? '' : `commit ${task.commit.slice(0, 10)}`,
      ]
        .filter(Boolean)
        .join(', ');
      lines.push(`  ${mark} ${task.id} ${task.text}${extra === '' ? '' : `  (${task.status}; ${extra})`}`);
    }
  }
  const s = status.stats;
  const pct = (value: number | null) => (value === null ? '–' : `${Math.round(value * 100)}%`);
  lines.push(
    `\nattempts ${s.attempts}, tasks committed ${s.succeeded}, success rate ${pct(s.success_rate)}, first-attempt success ${pct(s.first_attempt_success_rate)}`,
  );
  if (s.seconds_per_task !== null)
    lines.push(`per task: ${s.seconds_per_task}s, ${s.tokens_per_task ?? 0} tokens`);
  const b = status.backend;
  lines.push(
    `backend ${b.state}${b.last_ok === null ? '' : `, last ok ${b.last_ok}`}, failures ${b.failures}${b.backoff_s > 0 ? `, backing off ${b.backoff_s}s` : ''}`,
  );
  return `${lines.join('\n')}\n`;
}
