import { describe, expect, it } from 'vitest';
import { CompletionDaemon } from '../../../src/application/daemon/completion-daemon.ts';
import { idleUntilAnswered } from '../../../src/application/daemon/parked-task.ts';
import type {
  DaemonStateStore,
  ParkedRunState,
  TaskResumeResult,
  TaskRunner,
  TaskRunResult,
  ValidationReport,
  Validator,
} from '../../../src/application/daemon/daemon-ports.ts';
import type { StampedDaemonEvent } from '../../../src/application/daemon/daemon-events.ts';
import { type DaemonState, emptyState, freshRecord } from '../../../src/application/daemon/daemon-state.ts';
import type { OpenSpecScan, OpenSpecSource, OpenSpecTask } from '../../../src/application/daemon/openspec.ts';
import type { Repository } from '../../../src/application/daemon/repository.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';

/** One change, `alpha`, whose tasks a test may edit. */
class Tasks implements OpenSpecSource {
  tasks: OpenSpecTask[] = [task('1.1', 'Add double')];
  async scan(): Promise<OpenSpecScan> {
    return {
      changes: [
        {
          id: 'alpha',
          tasksFile: 'openspec/changes/alpha/tasks.md',
          proposal: '# alpha',
          design: null,
          specs: [],
          tasks: structuredClone(this.tasks),
        },
      ],
      unreadable: [],
    };
  }
  async tick(_change: string, done: OpenSpecTask): Promise<void> {
    this.tasks = this.tasks.map((t) => (t.id === done.id ? { ...t, done: true } : t));
  }
}

/** Git in memory: what was set aside, brought back and restored, and a tree that may be dirty. */
class Git implements Repository {
  log: string[] = [];
  dirty = false;
  holds = false;
  clash: string | null = null;
  async ensureReady(options: { dirtyOk?: boolean } = {}) {
    if (this.dirty && options.dirtyOk !== true)
      throw new FabricError('usage', 'the tree has uncommitted changes');
  }
  async lock() {
    return async () => {};
  }
  async head() {
    return 'c0';
  }
  async restore() {
    this.log.push('restore');
    this.dirty = false;
  }
  async changedFiles() {
    return this.dirty ? ['src/lib.rs'] : ['src/double.rs'];
  }
  async commit(message: string) {
    this.log.push(`commit ${message.split('\n')[0]}`);
    return { commit: 'c1', size: { files: 1, added: 1, removed: 0 } };
  }
  async setAside(name: string) {
    this.log.push(`aside ${name}`);
    return `refs/fabric/parked/${name}`;
  }
  async bringBack(ref: string) {
    this.log.push(`back ${ref}`);
    return this.clash === null ? ({ ok: true } as const) : ({ ok: false, reason: this.clash } as const);
  }
  async holdsAside() {
    return this.holds;
  }
  async dropAside(ref: string) {
    this.log.push(`drop ${ref}`);
  }
}

/** Runs that park first (on `cargo tree`) and succeed once resumed; the approvals' state is the test's. */
class Runner implements TaskRunner {
  log: string[] = [];
  states = new Map<string, ParkedRunState>();
  #n = 0;
  async run(): Promise<TaskRunResult> {
    this.#n += 1;
    const id = `run${this.#n}`;
    this.log.push(`run ${id}`);
    this.states.set(id, { kind: 'waiting', approval: { id: `ap-${id}`, call: 'cargo tree' } });
    return { kind: 'ran', result: result(id, 'awaiting_approval') };
  }
  async resume(runId: string): Promise<TaskResumeResult> {
    this.log.push(`resume ${runId}`);
    return { kind: 'ran', result: result(runId, 'succeeded') };
  }
  async parked(runId: string): Promise<ParkedRunState> {
    return this.states.get(runId) ?? { kind: 'ended', status: 'unknown' };
  }
  async cancelParked(runId: string): Promise<void> {
    this.log.push(`cancel ${runId}`);
  }
}

class State implements DaemonStateStore {
  state: DaemonState | null = null;
  async load() {
    return this.state === null ? null : structuredClone(this.state);
  }
  async save(state: DaemonState) {
    this.state = structuredClone(state);
  }
}

const PASSING: Validator = {
  async validate(): Promise<ValidationReport> {
    return { ok: true, report: 'ok', summary: '', testsPassed: 1, failedTests: [] };
  },
};

function task(id: string, text: string): OpenSpecTask {
  return { id, text, done: false, details: [], section: '1. Work', line: 1, parent: null };
}

function result(runId: string, status: 'succeeded' | 'awaiting_approval'): RunResult {
  return {
    run_id: runId,
    status,
    payload: status === 'succeeded' ? { summary: 'done' } : null,
    error: null,
    model: 'm',
    backend: 'b',
    steps: 2,
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    runlog: `/runs/${runId}/runlog.jsonl`,
    ...(status === 'awaiting_approval'
      ? { approval: { id: `ap-${runId}`, tool: 'shell', argv: ['cargo', 'tree'] } }
      : {}),
  };
}

/** One `fabric daemon --once` over the shared parts; its events. */
async function once(parts: { tasks: Tasks; git: Git; runner: Runner; state: State }) {
  const events: StampedDaemonEvent[] = [];
  let now = Date.parse('2026-11-28T00:00:00Z');
  const outcome = await new CompletionDaemon(
    {
      repo: '/repo',
      openspec: parts.tasks,
      git: parts.git,
      runner: parts.runner,
      validator: PASSING,
      state: parts.state,
      clock: {
        now: () => {
          now += 10;
          return new Date(now);
        },
      },
      owner: { pid: 1, host: 'h' },
      onEvent: (event) => events.push(event),
    },
    { changes: [], once: true, intervalMs: 1000, maxAttempts: 2, retryBlocked: false, baseline: false },
  ).run(new AbortController().signal);
  return { outcome, events, kinds: events.map((e) => e.event) };
}

function parts() {
  return { tasks: new Tasks(), git: new Git(), runner: new Runner(), state: new State() };
}

describe('a task whose run is parked on an approval (SPEC §19)', () => {
  it('is set aside with the tree put back, waits while pending, and goes on under its run once answered', async () => {
    const p = parts();
    const first = await once(p);
    expect(first.outcome).toEqual({ cancelled: false, blocked: 0, awaitingApproval: 1 });
    expect(p.git.log).toEqual(['aside run1', 'restore']);
    expect(p.state.state?.tasks[0]).toMatchObject({
      status: 'awaiting_approval',
      attempts: 0,
      run_in_flight: 'run1',
      parked: { run_id: 'run1', approval_id: 'ap-run1', call: 'cargo tree', ref: 'refs/fabric/parked/run1' },
    });

    const waiting = await once(p);
    expect(waiting.kinds).not.toContain('task_start');
    expect(waiting.events.find((e) => e.event === 'change_stopped')).toMatchObject({
      reason: 'awaiting_approval',
    });

    p.runner.states.set('run1', { kind: 'answered' });
    const answered = await once(p);
    expect(answered.outcome.awaitingApproval).toBe(0);
    expect(answered.events.find((e) => e.event === 'task_resumed')).toMatchObject({
      run_id: 'run1',
      after_approval: 'ap-run1',
    });
    expect(p.runner.log).toEqual(['run run1', 'resume run1']);
    expect(p.git.log.slice(2)).toEqual([
      'back refs/fabric/parked/run1',
      'drop refs/fabric/parked/run1',
      'commit alpha 1.1: Add double',
    ]);
    expect(p.state.state?.tasks[0]).toMatchObject({
      status: 'done',
      attempts: 1,
      run_ids: ['run1'],
      parked: null,
    });
  });

  it('starts the attempt again when the edits set aside clash with what was committed since, the ref kept', async () => {
    const p = parts();
    await once(p);
    p.runner.states.set('run1', { kind: 'answered' });
    p.git.clash = 'the edits set aside clash with what was committed since in src/lib.rs';
    const second = await once(p);
    const refused = second.events.find((e) => e.event === 'resume_refused');
    expect(refused).toMatchObject({
      run_id: 'run1',
      reason: 'the edits set aside clash with what was committed since in src/lib.rs',
      ref: 'refs/fabric/parked/run1',
    });
    // The parked run ends cancelled, a new run takes the attempt (parking again here), no attempt spent.
    expect(p.runner.log).toEqual(['run run1', 'cancel run1', 'run run2']);
    expect(p.git.log).not.toContain('drop refs/fabric/parked/run1');
    expect(p.state.state?.tasks[0]).toMatchObject({
      status: 'awaiting_approval',
      attempts: 0,
      parked: { run_id: 'run2' },
    });
  });

  it('blocks the task when a person cancelled its run while it waited, naming where the edits are', async () => {
    const p = parts();
    await once(p);
    p.runner.states.set('run1', { kind: 'ended', status: 'cancelled' });
    const second = await once(p);
    expect(second.outcome).toEqual({ cancelled: false, blocked: 1, awaitingApproval: 0 });
    const blocked = second.events.find((e) => e.event === 'task_blocked');
    expect(blocked && 'diagnostics' in blocked ? blocked.diagnostics : '').toContain(
      'Its run run1 ended cancelled while it waited for approval ap-run1 (cargo tree). Its edits are kept at refs/fabric/parked/run1',
    );
    expect(p.runner.log).toEqual(['run run1']);
  });

  it('forgets a parked run whose task text changed: the run is cancelled and the new text worked on', async () => {
    const p = parts();
    await once(p);
    p.tasks.tasks = [task('1.1', 'Add double, checked')];
    const second = await once(p);
    const refused = second.events.find((e) => e.event === 'resume_refused');
    expect(refused).toMatchObject({
      run_id: 'run1',
      reason: 'its task text changed',
      ref: 'refs/fabric/parked/run1',
    });
    expect(p.runner.log).toEqual(['run run1', 'cancel run1', 'run run2']);
  });

  it('a daemon killed between saving the park and putting the tree back restores the tree it set aside when started', async () => {
    const p = parts();
    await once(p);
    p.git.log = [];
    p.git.dirty = true;
    p.git.holds = true;
    await once(p);
    expect(p.git.log[0]).toBe('restore');

    // A tree holding anything else is not the daemon's to discard: the start is refused.
    p.git.dirty = true;
    p.git.holds = false;
    await expect(once(p)).rejects.toThrow('uncommitted changes');
  });

  it('a daemon killed as its run parked sets the edits the tree holds aside when started, without resuming the run', async () => {
    const p = parts();
    p.runner.states.set('run9', { kind: 'waiting', approval: { id: 'ap-run9', call: 'cargo tree' } });
    // The state a daemon killed mid-run leaves: the task running, its run's id saved.
    const state = emptyState('/repo', new Date('2026-11-28T00:00:00Z'));
    state.tasks.push({
      ...freshRecord('alpha', '1.1', 'Add double'),
      status: 'running',
      run_in_flight: 'run9',
    });
    p.state.state = state;
    p.git.dirty = true;
    const started = await once(p);
    expect(started.kinds).toContain('task_parked');
    expect(p.runner.log).toEqual([]);
    expect(p.git.log).toEqual(['aside run9', 'restore']);
    expect(p.state.state?.tasks[0]).toMatchObject({
      status: 'awaiting_approval',
      parked: { approval_id: 'ap-run9' },
    });
  });

  describe('the wait between passes', () => {
    /** A state with alpha 1.1 parked on run1, and a runner counting what it is asked. */
    async function idle(answers: ParkedRunState['kind'][], wanted: boolean, intervalMs: number) {
      const p = parts();
      await once(p);
      const asked: string[] = [];
      p.runner.parked = async (runId) => {
        asked.push(runId);
        const kind = answers.shift() ?? 'answered';
        return kind === 'waiting'
          ? { kind, approval: { id: 'ap-run1', call: 'cargo tree' } }
          : kind === 'answered'
            ? { kind }
            : { kind, status: 'cancelled' };
      };
      const context = {
        runner: p.runner,
        git: p.git,
        clock: { now: () => new Date() },
        state: p.state.state!,
        save: async () => {},
        emit: () => {},
      };
      await idleUntilAnswered(
        context,
        p.state.state!,
        () => wanted,
        intervalMs,
        new AbortController().signal,
      );
      return asked;
    }

    it('ends once a task parked and waiting when it began is answered, long before the interval', async () => {
      // Ten minutes: only the answer can end it within the test's time.
      expect(await idle(['waiting', 'waiting', 'answered'], true, 600_000)).toEqual(['run1', 'run1', 'run1']);
    });

    it('is not ended by a task answered already (its change stopped before it) or of a change not worked on', async () => {
      expect(await idle(['answered'], true, 50)).toEqual(['run1']);
      expect(await idle(['waiting'], false, 50)).toEqual([]);
    });
  });
});
