/**
 * Where approvals and grants are kept (SPEC §19, ADR 0017): any process with the runs directory
 * (or the control plane) reads and answers them; the first answer wins, a second gets
 * `approval_answered` (HTTP 409).
 */
import type {
  ApprovalAnswer,
  ApprovalDecision,
  ApprovalRecord,
  ApprovalState,
  Grant,
  GrantScope,
} from '../../domain/approvals.ts';

export interface ApprovalFilter {
  readonly state?: ApprovalState | undefined;
  readonly runId?: string | undefined;
}

export interface GrantFilter {
  readonly specialist?: string | undefined;
  /** Revoked and expired grants too. */
  readonly all?: boolean | undefined;
}

export interface ApprovalStore {
  /** Where it keeps them, to name in messages (the approvals directory under the runs directory). */
  readonly location: string;
  /** Keeps a new pending approval. */
  create(record: ApprovalRecord): Promise<void>;
  /** The approval (an id or a unique prefix of one), its state as of now; undefined when unknown. */
  get(id: string): Promise<ApprovalRecord | undefined>;
  /** The approval asked for one call of a run, if any. */
  forCall(runId: string, callId: string): Promise<ApprovalRecord | undefined>;
  /** Newest first. */
  list(filter?: ApprovalFilter): Promise<ApprovalRecord[]>;
  /**
   * Answers a pending approval, and keeps the grant a `run` or `specialist` answer leaves. Throws
   * `approval_answered` when it already has an answer (or expired), `approval_not_found` when unknown.
   */
  answer(id: string, answer: ApprovalAnswer): Promise<ApprovalRecord>;
  /** Grants, newest first; by default only those in force. */
  grants(filter?: GrantFilter): Promise<Grant[]>;
  /** Revokes a grant (an id or a unique prefix); `grant_not_found` when unknown. */
  revoke(id: string, at: string): Promise<Grant>;
  /**
   * The store's files that are not whole (cut, emptied, edited by hand): listings leave them
   * out, and the channels that list name them with what to do.
   */
  unreadable(): Promise<UnreadableFile[]>;
}

/** A file of the approval store that cannot be read as what it should hold. */
export interface UnreadableFile {
  readonly file: string;
  /** What is wrong with it, e.g. "not whole JSON (cut short?)". */
  readonly problem: string;
  /** What happens to it and what to do. */
  readonly fix: string;
}

/** What a channel sends to answer an approval. */
export interface AnswerInput {
  readonly decision: ApprovalDecision;
  readonly scope?: GrantScope | undefined;
  /** Index into the approval's proposed patterns; default: the exact call. */
  readonly pattern?: number | undefined;
  readonly message?: string | undefined;
  /** Seconds a `specialist` grant lasts; default: until revoked. */
  readonly expiresInS?: number | undefined;
  readonly channel: string;
  readonly by?: string | undefined;
}
