import type { ModelProfile } from '../../config/schema.ts';
import type { ChatClient, Clock, RunLogStore, RunObserver, SpecialistPack, TurnSettings } from '../ports.ts';
import type { RunOwner } from '../runs/liveness-ports.ts';
import type { KeptOutputs } from './output-budget.ts';
import type { RunStatus } from '../../domain/run-result.ts';
import type { RunHistory } from '../replay/run-history.ts';
import type { WorkspaceFingerprint } from './workspace-fingerprint.ts';
import type { InboxReader } from './steering.ts';
import type { ApprovalSettings } from './call-approvals.ts';

/** Everything one run needs. The interfaces build it; nothing here knows which adapter is behind a port. */
export interface ExecuteTaskInput {
  /**
   * Asked before each runlog line: an error means this process lost the run (a queue worker whose
   * lease another took, or expired unrenewed): nothing more is written, no model request is sent,
   * and the run rejects with that error (SPEC §18: one process appends to a run at a time).
   */
  readonly fence?: () => Error | undefined;
  readonly specialist: string;
  readonly task: string;
  readonly pack: SpecialistPack;
  readonly chat: ChatClient;
  readonly model: {
    readonly id: string;
    readonly backend: string;
    readonly reason?: string;
    /** The server's build and what reads the model's calls, as the server reported them (Q33, Q34). */
    readonly server?: string;
    readonly toolParser?: string;
  };
  readonly runLogStore: RunLogStore;
  readonly observers?: readonly RunObserver[];
  readonly limits: {
    readonly maxSteps: number;
    readonly budgetMs: number;
    readonly recoverTextToolCalls: boolean;
    /** The same call answered the same this many times in a row makes a run stuck (default 4). */
    readonly stuckRepeats?: number;
  };
  readonly workspace: string | null;
  readonly configDigest: string;
  readonly fabricVersion: string;
  readonly clock: Clock;
  readonly signal: AbortSignal;
  readonly runId?: string;
  /**
   * The process running the loop, recorded in `run_start` so readers can tell a run in progress
   * from one whose process died (SPEC §6). The composition root passes its pid and host name.
   */
  readonly owner?: RunOwner;
  /** Labels recorded in `run_start` (a battery id and cell, the daemon's change and task). */
  readonly tags?: Readonly<Record<string, string>>;
  /** Who alone resumes the run (recorded in `run_start`; `RunRequest.resumer`). */
  readonly resumer?: string;
  /** The model's profile and the settings each request is sent with (SPEC §16). */
  readonly profile?: RunProfile;
  /** The model's context window in tokens, when known: tool results are budgeted to it (SPEC §17). */
  readonly windowTokens?: number;
  /** How the window came to be, when a reader should know (loaded now, less than asked for). */
  readonly windowNote?: string;
  /** Where the window came from, for `run_start`. */
  readonly windowSource?: string;
  /** Where whole outputs of cut results are kept; without it a large result is only cut. */
  readonly outputs?: KeptOutputs;
  /** Takes the workspace's fingerprint after each step (`step_end`, SPEC §18); none: not recorded. */
  readonly fingerprint?: WorkspaceFingerprint;
  /** Goes on with a run its previous process left (SPEC §18) instead of starting one. */
  readonly resume?: ResumeFrom;
  /** The run's inbox (SPEC §19 steering, ADR 0019): read between steps; none: the run cannot be steered. */
  readonly inbox?: InboxReader;
  /** A person's approvals (SPEC §19, ADR 0017); none: a call a rule says `ask` about is refused. */
  readonly approvals?: ApprovalSettings;
}

/** Where a resumed run goes on from, and how it came to be resumed. */
export interface ResumeFrom {
  readonly history: RunHistory;
  /** How the run ended before (`interrupted` when its process died without a `run_end`). */
  readonly previousStatus: RunStatus;
  /** Resumed although its config or pack changed (`--force`). */
  readonly forced: boolean;
  /** The model and the server (`<backend> <url>`) the run was last on: preferred when still there. */
  readonly previous?: { readonly model: string; readonly server: string };
}

/** A run's model profile as the loop uses it. */
export interface RunProfile {
  readonly matched: readonly string[];
  readonly source?: string;
  readonly settings: ModelProfile;
  /** What each request asks of the server. */
  readonly turn: TurnSettings;
  /** Whether the model's reasoning goes back with its turns. */
  readonly passReasoningBack: boolean;
}
