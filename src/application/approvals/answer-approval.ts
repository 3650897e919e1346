/**
 * Answering an approval (SPEC §19), the same through every channel: the terminal prompt,
 * `fabric approvals answer`, HTTP, the viewer and MCP. A broader grant uses one of the patterns
 * the fabric proposed (shown before the answer), never one the person or the model writes.
 */
import { type ApprovalRecord, GRANT_SCOPES } from '../../domain/approvals.ts';
import { FabricError } from '../../domain/errors.ts';
import type { AnswerInput, ApprovalStore } from './approval-store.ts';

/** The longest message to the model an answer may carry. */
export const MAX_ANSWER_MESSAGE = 4000;

/**
 * The longest a grant may be given to last: 10 years, in seconds. A longer one is no different
 * from "until revoked", and one past the year 275760 is no date at all (`Invalid time value`).
 */
export const MAX_GRANT_EXPIRY_S = 10 * 365 * 86_400;

/** The limit in words, for the messages of every channel. */
export const MAX_GRANT_EXPIRY_TEXT = `at most 10 years (3650d, ${MAX_GRANT_EXPIRY_S} seconds)`;

/** Checks the answer against the approval and keeps it; the first answer wins. */
export async function answerApproval(
  store: ApprovalStore,
  id: string,
  input: AnswerInput,
  now: Date,
): Promise<ApprovalRecord> {
  const record = await store.get(id);
  if (record === undefined)
    throw new FabricError(
      'approval_not_found',
      `No approval "${id}" in ${store.location}. List the pending ones with: fabric approvals list (with the config or FABRIC_RUNS_DIR of the run's process)`,
      { details: { approval: id } },
    );
  const scope = input.scope ?? 'once';
  // Answered already (or expired): the store says so (approval_answered), whatever this answer is.
  const settled = record.state !== 'pending';
  if (!GRANT_SCOPES.includes(scope))
    throw new FabricError('usage', `Unknown scope "${scope}": use once, run or specialist.`);
  if (input.decision === 'deny' && scope !== 'once')
    throw new FabricError('usage', 'A denial is for this call only: leave out the scope (or give once).');
  const pattern = input.pattern ?? 0;
  if (!settled && (!Number.isInteger(pattern) || pattern < 0 || pattern >= record.proposals.length))
    throw new FabricError(
      'usage',
      `Pattern ${pattern} is not one the fabric proposed for ${record.id}; the patterns are: ${record.proposals
        .map((proposal, index) => `${index} = ${proposal.label}`)
        .join('; ')}.`,
    );
  if (scope === 'once' && pattern !== 0)
    throw new FabricError(
      'usage',
      'A broader pattern needs a scope that lasts: give scope run or specialist.',
    );
  if (input.expiresInS !== undefined && (scope === 'once' || !(input.expiresInS > 0)))
    throw new FabricError(
      'usage',
      'An expiry is for a grant that lasts (scope run or specialist), in seconds greater than 0.',
    );
  if (input.expiresInS !== undefined && input.expiresInS > MAX_GRANT_EXPIRY_S)
    throw new FabricError(
      'usage',
      `An expiry is ${MAX_GRANT_EXPIRY_TEXT}, not ${input.expiresInS} seconds; leave it out for a grant that lasts until revoked.`,
    );
  const message = input.message?.trim();
  if (message !== undefined && message.length > MAX_ANSWER_MESSAGE)
    throw new FabricError(
      'usage',
      `The message is ${message.length} characters; at most ${MAX_ANSWER_MESSAGE}.`,
    );
  return store.answer(record.id, {
    state: input.decision === 'approve' ? 'approved' : 'denied',
    scope,
    pattern,
    ...(message === undefined || message === '' ? {} : { message }),
    channel: input.channel,
    ...(input.by === undefined ? {} : { by: input.by }),
    at: now.toISOString(),
    ...(input.expiresInS === undefined
      ? {}
      : { grant_expires_at: new Date(now.getTime() + input.expiresInS * 1000).toISOString() }),
  });
}
