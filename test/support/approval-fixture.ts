import { type ApprovalRecord, proposePatterns } from '../../src/domain/approvals.ts';

/** A pending approval of a shell command, as a run asking for it writes one (SPEC §19). */
export function pendingApproval(id: string, runId: string, command: string): ApprovalRecord {
  const argv = command.split(' ');
  return {
    id,
    run_id: runId,
    specialist: 'units',
    step: 1,
    call_id: `call-${id}`,
    tool: 'shell',
    argv,
    arguments: JSON.stringify({ command }),
    rule: `policy.rules[0] (shell "${command}": ask)`,
    requested_at: new Date().toISOString(),
    proposals: proposePatterns({ tool: 'shell', argv, arguments: '{}' }),
    state: 'pending',
  };
}
