/**
 * The control plane's port: where runs are mirrored (one row a run, one per runlog event, one
 * per model call) and what the exports read back. Adapters (Postgres, embedded PGlite) live in
 * `src/infrastructure/control/` and run the same SQL. Nothing here does I/O.
 */
import type { RunEvent } from '../../domain/run-events.ts';
import type { BackendKind } from '../ports.ts';

/** One model call, as a row of `control.agent_run`. Keyed by the runlog line that recorded it. */
export interface ModelCallRecord {
  readonly run_id: string;
  /** The `seq` of the `llm_response`, `llm_retry` or `run_end` line the call is derived from. */
  readonly seq: number;
  readonly step: number | null;
  readonly tool: BackendKind;
  readonly model: string;
  /** Known for answered calls only; a failed call's time is not in the runlog. */
  readonly latency_ms: number | null;
  readonly success: boolean;
  readonly error_reason: string | null;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  /** What the call spent reasoning (SPEC §16): the server's count when it gives one, and the text's length; null when it did not reason. */
  readonly reasoning_tokens?: number | null;
  readonly reasoning_chars?: number | null;
  readonly ts: string;
}

/** What one write carries: runlog lines and the model calls derived from them. */
export interface ControlBatch {
  readonly events: readonly RunEvent[];
  readonly modelCalls: readonly ModelCallRecord[];
}

/** Rows a write actually inserted; rows already there (mirror and sync overlap) are not counted. */
export interface ControlWriteCounts {
  readonly events: number;
  readonly modelCalls: number;
}

/** The outcome of `migrate()`: the versions applied by this call and the schema's version after it. */
export interface MigrationReport {
  readonly applied: readonly number[];
  readonly version: number;
}

/** How much of a run the store holds, so `sync` writes only runs that are behind. */
export interface MirroredRun {
  readonly runId: string;
  readonly events: number;
  readonly status: string;
  /**
   * The store has the run's `run_end` and every line before it (as many events as the highest
   * seq): sync need not read its runlog, unless the run was resumed since (SPEC §18: its runlog
   * goes on past that `run_end`, which sync tells from the runlog's last seq).
   */
  readonly complete: boolean;
}

/**
 * A row of `control.runs`. `status` is `running` until the run's `run_end` is mirrored, or
 * `interrupted` once sync finds its process gone without one.
 */
export interface ControlRunRow {
  readonly id: string;
  readonly specialist: string | null;
  readonly task: string | null;
  readonly model: string | null;
  readonly backend: string | null;
  readonly status: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly steps: number | null;
  readonly prompt_tokens: number | null;
  readonly completion_tokens: number | null;
  readonly total_tokens: number | null;
  readonly duration_ms: number | null;
  readonly payload: Record<string, unknown> | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** A half-open time range `[from, to)`. */
export interface TimeWindow {
  readonly from: Date;
  readonly to: Date;
}

/** Model calls per UTC day and model. */
export interface UsageRow {
  readonly day: string;
  readonly model: string;
  readonly calls: number;
  readonly successes: number;
  readonly failures: number;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** Model calls per backend kind and UTC day, with their outcome and latency. */
export interface HealthRow {
  readonly tool: BackendKind;
  readonly day: string;
  readonly calls: number;
  readonly successes: number;
  readonly failures: number;
  readonly error_rate: number;
  readonly mean_latency_ms: number | null;
  readonly p95_latency_ms: number | null;
}

/** Counts of model calls in a window: what the LM indicator decides from. */
export interface CallTotals {
  readonly total_calls: number;
  readonly successes: number;
  readonly failures: number;
}

/** What stands out in a window. */
export interface InsightsData {
  readonly top_models: readonly { model: string; calls: number; total_tokens: number }[];
  readonly slowest_model: { model: string; mean_latency_ms: number; calls: number } | null;
  readonly error_reasons: readonly { reason: string; count: number }[];
  readonly runs_by_status: readonly { status: string; runs: number }[];
}

/** Writes runs to the control plane. Every write is idempotent, keyed by (run_id, seq). */
export interface ControlWriter {
  /** Applies the versioned migrations not yet applied, each in a transaction. Idempotent. */
  migrate(): Promise<MigrationReport>;
  /** Writes a batch in one transaction; events and calls already present are left as they are. */
  write(batch: ControlBatch): Promise<ControlWriteCounts>;
  /**
   * From now on, this process's writes for the run (mirror, backfill, sync) hold only while the
   * run's row has this lease token and says `running`; others are dropped in the database. A
   * queue worker fences each run it takes (issue 26), so nothing it writes late lands.
   */
  fence(runId: string, token: string): void;
  /** How many events the store holds per run. */
  mirroredRuns(): Promise<ReadonlyMap<string, MirroredRun>>;
  /**
   * Sets these runs to `interrupted` where their row says `running`: their runlog has no
   * `run_end` and their process is gone (SPEC §6). Other statuses are left alone, and a
   * `run_end` written later still overwrites it. Returns how many rows changed.
   */
  markInterrupted(runIds: readonly string[]): Promise<number>;
}

/** One row of `control.approvals`: what a person was asked, and the answer once given. */
export interface ControlApprovalRow {
  readonly approval_id: string;
  readonly run_id: string;
  readonly call_id: string | null;
  readonly tool: string | null;
  readonly argv: readonly string[] | null;
  readonly rule: string | null;
  readonly on_approval: string | null;
  readonly state: string;
  readonly scope: string | null;
  readonly channel: string | null;
  readonly answered_by: string | null;
  readonly message: string | null;
}

/** Reads the control plane back: runs for listings, aggregates for the exports. */
export interface ControlReader {
  listRuns(options: { readonly limit: number }): Promise<readonly ControlRunRow[]>;
  getRun(runId: string): Promise<ControlRunRow | null>;
  /** A run's events as runlog lines, in seq order; only those after `afterSeq` when given. */
  runEvents(runId: string, afterSeq?: number): Promise<readonly RunEvent[]>;
  /**
   * Whether a queue worker holds the run's lease now (renewed, not expired): it may still write
   * the run's lines, up to its end (issue 35). False for a run no worker holds.
   */
  leaseHeld?(runId: string): Promise<boolean>;
  modelCalls(runId: string): Promise<readonly ModelCallRecord[]>;
  /** A run's approvals as the control plane holds them (SPEC §19), oldest first. */
  runApprovals?(runId: string): Promise<readonly ControlApprovalRow[]>;
  usage(window: TimeWindow): Promise<readonly UsageRow[]>;
  health(window: TimeWindow): Promise<readonly HealthRow[]>;
  insights(window: TimeWindow): Promise<InsightsData>;
  callTotals(window: TimeWindow): Promise<CallTotals>;
}

/** A control-plane database: Postgres when a DSN names one, else the embedded PGlite. */
export interface ControlStore extends ControlWriter, ControlReader {
  readonly kind: 'postgres' | 'pglite';
  /** Where it is, safe to print: the DSN without its password, or the data directory. */
  readonly location: string;
  /** Releases connections. Later calls fail. */
  close(): Promise<void>;
}
