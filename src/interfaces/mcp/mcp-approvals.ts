/**
 * Approvals over MCP (SPEC §19): a client that declared elicitation is asked in the tool call
 * itself (`elicitation/create`); any other gets the run back at once, parked, with the approval's
 * id, and answers it with `answer_approval`. An MCP call never hangs on an approval nobody sees.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ElicitRequestFormParams, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { AnswerInput } from '../../application/approvals/approval-store.ts';
import type { ApprovalPrompt } from '../../application/run/call-approvals.ts';
import type { OnApproval } from '../../domain/approvals.ts';
import { type ApprovalRecord, describeCall } from '../../domain/approvals.ts';
import { showArgv, showText } from '../../domain/show-argv.ts';

/** The channel MCP answers are recorded under. */
export const MCP_CHANNEL = 'mcp';

/** An elicitation waits for the person as long as the run does (the SDK's default is 60 s). */
const ELICIT_TIMEOUT_MS = 2_147_483_647;

/** What a run started or resumed over MCP does with a call that needs approval. */
export interface McpApprovalOptions {
  readonly onApproval?: OnApproval | undefined;
  readonly defaultOnApproval: OnApproval;
  readonly approvalPrompt?: ApprovalPrompt | undefined;
  readonly noWaiting?: boolean | undefined;
}

/**
 * With elicitation: the run waits, asking the client (and any other channel answers too).
 * Without: the run parks unless the config says otherwise, and the tool returns at once.
 */
export function mcpApprovalOptions(server: Server, relatedRequestId?: RequestId): McpApprovalOptions {
  // Nobody to ask: a config's `wait` parks too, so the call returns at once (it never hangs).
  if (server.getClientCapabilities()?.elicitation === undefined)
    return { defaultOnApproval: 'park', noWaiting: true };
  return {
    onApproval: 'wait',
    defaultOnApproval: 'park',
    approvalPrompt: elicitingPrompt(server, relatedRequestId),
  };
}

/**
 * Asks the client's person; accept → their answer, decline → deny, cancel (or a failure) →
 * undefined. `relatedRequestId`: the tool call it belongs to, so over streamable HTTP the question
 * rides that call's own response stream (a client need not hold a GET stream open).
 */
export function elicitingPrompt(server: Server, relatedRequestId?: RequestId): ApprovalPrompt {
  return async (record, signal) => {
    const by = server.getClientVersion()?.name;
    let result: Awaited<ReturnType<Server['elicitInput']>>;
    try {
      result = await server.elicitInput(elicitation(record), {
        signal,
        timeout: ELICIT_TIMEOUT_MS,
        ...(relatedRequestId === undefined ? {} : { relatedRequestId }),
      });
    } catch {
      // Cancelled, timed out or refused by the client: other channels may still answer.
      return undefined;
    }
    const base = { channel: MCP_CHANNEL, ...(by === undefined ? {} : { by: `MCP client ${by}` }) };
    if (result.action === 'decline') return { ...base, decision: 'deny' };
    if (result.action !== 'accept') return undefined;
    const content = result.content ?? {};
    const decision = content.decision === 'deny' ? 'deny' : 'approve';
    const scope = content.scope;
    const answer: AnswerInput = {
      ...base,
      decision,
      ...(decision === 'approve' && (scope === 'run' || scope === 'specialist') ? { scope } : {}),
      ...(decision === 'approve' && typeof content.pattern === 'number' && scope !== 'once'
        ? { pattern: content.pattern }
        : {}),
      ...(typeof content.message === 'string' && content.message.trim() !== ''
        ? { message: content.message }
        : {}),
    };
    return answer;
  };
}

/** The form the client shows: the exact call, the rule, the patterns, and the answer's fields. */
export function elicitation(record: ApprovalRecord): ElicitRequestFormParams {
  return {
    mode: 'form',
    message: approvalText(record),
    requestedSchema: {
      type: 'object',
      properties: {
        decision: {
          type: 'string',
          title: 'Decision',
          description: 'approve runs the call; deny refuses it (the model is told)',
          enum: ['approve', 'deny'],
        },
        scope: {
          type: 'string',
          title: 'Scope',
          description:
            'once: this call only; run: the pattern for the rest of this run; specialist: for this specialist, until revoked',
          enum: ['once', 'run', 'specialist'],
          default: 'once',
        },
        pattern: {
          type: 'integer',
          title: 'Pattern',
          description: `for scope run or specialist: ${patternList(record)}`,
          minimum: 0,
          maximum: record.proposals.length - 1,
          default: 0,
        },
        message: {
          type: 'string',
          title: 'Message to the model',
          description: 'optional; the model reads it with the answer',
        },
      },
      required: ['decision'],
    },
  };
}

/**
 * The approval in words, with its patterns (what each matches and what not): the elicitation a
 * person reads before answering, so the argv is shell-quoted and control characters are escaped.
 */
export function approvalText(record: ApprovalRecord): string {
  const what =
    record.argv !== undefined
      ? `run the command \`${showArgv(record.argv)}\``
      : record.path !== undefined
        ? `call ${record.tool} on ${showText(record.path)}`
        : `call ${record.tool} with ${showText(record.arguments)}`;
  return [
    `Run ${record.run_id} (specialist ${record.specialist}) wants to ${what}.`,
    `Rule: ${record.rule}.`,
    'Patterns a lasting grant can use:',
    ...record.proposals.map((pattern, index) =>
      showText(`  ${index} = ${pattern.label}: matches ${pattern.matches}; not ${pattern.does_not_match}`),
    ),
  ].join('\n');
}

/** The approval as run_task returns it for a parked run. */
export function approvalView(record: ApprovalRecord) {
  return {
    id: record.id,
    run_id: record.run_id,
    specialist: record.specialist,
    tool: record.tool,
    ...(record.argv === undefined ? {} : { argv: [...record.argv] }),
    ...(record.path === undefined ? {} : { path: record.path }),
    rule: record.rule,
    state: record.state,
    proposals: record.proposals.map((pattern, index) => ({
      index,
      label: pattern.label,
      matches: pattern.matches,
      does_not_match: pattern.does_not_match,
    })),
    ...(record.expires_at === undefined ? {} : { expires_at: record.expires_at }),
    ...(record.answer === undefined ? {} : { answer: record.answer }),
  };
}

/** What run_task says in text about a parked run: what waits, and how to answer it. */
export function parkedText(record: ApprovalRecord): string {
  return [
    `Run ${record.run_id} waits for approval ${record.id}: ${describeCall(record)} (${record.rule}).`,
    `Answer it with answer_approval {"approval_id": "${record.id}", "decision": "approve"} (or "deny"); the run then goes on and answer_approval returns its result.`,
    `For a lasting grant give "scope": "run" or "specialist" and "pattern": ${patternList(record)}.`,
  ].join('\n');
}

function patternList(record: ApprovalRecord): string {
  return record.proposals.map((pattern, index) => `${index} = ${pattern.label}`).join('; ');
}
