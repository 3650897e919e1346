import type { DaemonTaskView } from './daemon-status.ts';

/** What the daemon reports as it goes: progress on stderr, or one JSON line each with `--json`. */
export type DaemonEvent =
  | {
      readonly event: 'daemon_start';
      readonly repo: string;
      readonly changes: readonly string[];
      /** Attempts per model. */
      readonly max_attempts: number;
      /** The escalation list (`daemon.models`), cheapest first; empty: one model. */
      readonly models: readonly string[];
      readonly interval_s: number;
      readonly once: boolean;
    }
  | {
      /**
       * \`daemon.models: auto\` (SPEC §20): the escalation as measured, best first, each model with
       * its measurement and date; the local models left out and why.
       */
      readonly event: 'escalation';
      readonly models: readonly {
        readonly model: string;
        readonly server: string | null;
        readonly measurement: string;
      }[];
      readonly left_out: readonly { readonly model: string; readonly why: string }[];
    }
  | { readonly event: 'change_unreadable'; readonly change: string; readonly message: string }
  | {
      /** The validation at HEAD before a change's first task: the tests that fail there are pre-existing. */
      readonly event: 'baseline';
      readonly change: string;
      readonly commit: string;
      readonly ok: boolean;
      /** Tests failing at HEAD; null when the build itself fails there. */
      readonly failed_tests: readonly string[] | null;
      readonly summary: string | null;
    }
  | {
      readonly event: 'task_start';
      readonly task: DaemonTaskView;
      readonly attempt: number;
      /** The model asked for (escalation); null: the specialist's own. */
      readonly model: string | null;
    }
  | {
      readonly event: 'run_end';
      readonly task: DaemonTaskView;
      readonly attempt: number;
      readonly run_id: string;
      readonly status: string;
      readonly error: string | null;
    }
  | {
      readonly event: 'validation';
      readonly task: DaemonTaskView;
      readonly attempt: number;
      readonly ok: boolean;
      readonly tests_passed: number | null;
      /** The commands' output when they failed; null when they passed. */
      readonly report: string | null;
      /** What failed, for a person (the failing tests and their messages); null when they passed. */
      readonly summary: string | null;
      /** Failing tests that fail at HEAD too (the baseline): reported, never blamed on the task. */
      readonly preexisting: readonly string[];
      /** The validation failed and is run again before the attempt is spent. */
      readonly rerun: boolean;
    }
  /**
   * An attempt going on under its run id, no attempt spent: one a killed daemon left, or one
   * parked on an approval now answered (`after_approval`, its edits brought back).
   */
  | {
      readonly event: 'task_resumed';
      readonly task: DaemonTaskView;
      readonly attempt: number;
      readonly run_id: string;
      readonly after_approval?: string;
    }
  /**
   * The task's run is parked on an approval (SPEC §19): its edits set aside under `ref`, the tree
   * clean; the daemon goes on with other changes, and with this one once the approval is answered.
   */
  | {
      readonly event: 'task_parked';
      readonly task: DaemonTaskView;
      readonly run_id: string;
      readonly approval_id: string;
      readonly call: string;
      readonly ref: string;
    }
  /**
   * An interrupted attempt that cannot go on, and why: the daemon does as without resume. With
   * `ref`, it was a parked run: it is cancelled, and its edits are kept at that ref.
   */
  | {
      readonly event: 'resume_refused';
      readonly task: DaemonTaskView;
      readonly run_id: string;
      readonly reason: string;
      readonly ref?: string;
    }
  | { readonly event: 'task_retry'; readonly task: DaemonTaskView; readonly diagnostics: string }
  | {
      readonly event: 'task_done';
      readonly task: DaemonTaskView;
      readonly seconds: number;
      readonly tokens: number;
      /** Time in the validation commands (cargo build, cargo test), all attempts. */
      readonly validation_ms: number;
      /** Clippy warnings before the first attempt and after the validated one; null when not counted. */
      readonly clippy_before: number | null;
      readonly clippy_after: number | null;
      /** Time counting clippy's warnings, before and after. */
      readonly clippy_ms: number;
      /** Tests failing at HEAD that still fail: reported, not the task's doing. */
      readonly preexisting_failures: readonly string[];
      /** Tests that failed, then passed when the validation ran again. */
      readonly flaky_tests: readonly string[];
      /** The daemon's own time: task text, tick, git status/add/commit, state writes. */
      readonly overhead_ms: number;
    }
  | { readonly event: 'task_blocked'; readonly task: DaemonTaskView; readonly diagnostics: string }
  | { readonly event: 'task_cancelled'; readonly task: DaemonTaskView }
  | {
      readonly event: 'change_stopped';
      readonly change: string;
      readonly task: string;
      readonly reason: string;
    }
  | {
      readonly event: 'backend_down';
      readonly message: string;
      readonly failures: number;
      readonly backoff_s: number;
    }
  | { readonly event: 'backend_up' }
  | {
      /** `openspec validate --strict` on a change whose last task is done. */
      readonly event: 'change_validated';
      readonly change: string;
      readonly ok: boolean;
      readonly output: string;
    }
  | {
      /** `openspec archive` (with `--archive`), committed on its own; null commit when it failed. */
      readonly event: 'change_archived';
      readonly change: string;
      readonly ok: boolean;
      readonly commit: string | null;
      readonly output: string;
    }
  | {
      readonly event: 'pass_end';
      readonly done: number;
      readonly pending: number;
      readonly blocked: number;
      readonly awaiting_approval: number;
    }
  | { readonly event: 'idle'; readonly next_scan_s: number }
  | {
      readonly event: 'daemon_stop';
      readonly reason: 'once' | 'cancelled';
      readonly blocked: number;
      /** Tasks whose run is parked on an approval nobody answered yet. */
      readonly awaiting_approval: number;
    };

/** An event with the time it happened. */
export type StampedDaemonEvent = DaemonEvent & { readonly ts: string };
