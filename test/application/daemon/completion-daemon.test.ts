import { describe, expect, it } from 'vitest';
import { CompletionDaemon } from '../../../src/application/daemon/completion-daemon.ts';
import type {
  ClippyCount,
  ClippyCounter,
  DaemonStateStore,
  OpenSpecCli,
  TaskRunner,
  TaskRunResult,
  ValidationReport,
  Validator,
} from '../../../src/application/daemon/daemon-ports.ts';
import type { DaemonState } from '../../../src/application/daemon/daemon-state.ts';
import type { StampedDaemonEvent } from '../../../src/application/daemon/daemon-events.ts';
import type {
  OpenSpecChange,
  OpenSpecScan,
  OpenSpecSource,
  OpenSpecTask,
} from '../../../src/application/daemon/openspec.ts';
import type { Repository } from '../../../src/application/daemon/repository.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { FabricError } from '../../../src/domain/errors.ts';

/** A change whose tasks a test may replace (a user editing tasks.md). */
type EditableChange = Omit<OpenSpecChange, 'tasks'> & { tasks: OpenSpecTask[] };

/** In-memory OpenSpec: changes held as objects; a tick marks the task done. */
class MemoryOpenSpec implements OpenSpecSource {
  changes: EditableChange[];
  constructor(changes: EditableChange[]) {
    this.changes = changes;
  }
  async scan(): Promise<OpenSpecScan> {
    return { changes: structuredClone(this.changes), unreadable: [] };
  }
  async tick(changeId: string, task: OpenSpecTask): Promise<void> {
    const change = this.changes.find((c) => c.id === changeId)!;
    change.tasks = change.tasks.map((t) => (t.id === task.id ? { ...t, done: true } : t));
  }
}

/** In-memory git: counts restores and commits; a hook can be made to fail. */
class MemoryRepo implements Repository {
  restores = 0;
  commits: string[] = [];
  hookFails = false;
  refuse: string | null = null;
  async ensureReady() {
    if (this.refuse !== null) throw new FabricError('usage', this.refuse);
  }
  async lock() {
    return async () => {};
  }
  async head() {
    return `c${this.commits.length}`;
  }
  async restore() {
    this.restores += 1;
  }
  async changedFiles() {
    return ['src/lib.rs'];
  }
  async commit(message: string) {
    if (this.hookFails) throw new FabricError('tool_failed', 'git commit failed: pre-commit said no');
    this.commits.push(message);
    return { commit: `c${this.commits.length}`, size: { files: 1, added: 3, removed: 0 } };
  }
  aside: string[] = [];
  async setAside(name: string) {
    this.aside.push(name);
    return `refs/fabric/parked/${name}`;
  }
  async bringBack() {
    return { ok: true } as const;
  }
  async holdsAside() {
    return false;
  }
  async dropAside(ref: string) {
    this.aside = this.aside.filter((name) => !ref.endsWith(name));
  }
}

class MemoryState implements DaemonStateStore {
  state: DaemonState | null = null;
  saves = 0;
  async load() {
    return this.state === null ? null : structuredClone(this.state);
  }
  async save(state: DaemonState) {
    this.saves += 1;
    this.state = structuredClone(state);
  }
}

/** A runner answering from a queue; every task text it was given is kept. */
class ScriptedRunner implements TaskRunner {
  texts: string[] = [];
  #answers: (TaskRunResult['kind'] | 'failed')[];
  #n = 0;
  constructor(answers: (TaskRunResult['kind'] | 'failed')[]) {
    this.#answers = answers;
  }
  async run(task: string): Promise<TaskRunResult> {
    this.texts.push(task);
    const kind = this.#answers.shift() ?? 'ran';
    if (kind === 'backend_down') return { kind, message: 'connection refused' };
    if (kind === 'cancelled') return { kind };
    this.#n += 1;
    return { kind: 'ran', result: runResult(`run${this.#n}`, kind === 'failed' ? 'failed' : 'succeeded') };
  }
}

class ScriptedValidator implements Validator {
  #answers: boolean[];
  constructor(answers: boolean[]) {
    this.#answers = answers;
  }
  async validate(): Promise<ValidationReport> {
    const ok = this.#answers.shift() ?? true;
    return {
      ok,
      report: ok ? '$ cargo test\nexit code 0' : '$ cargo test\nexit code 101\ntest x ... FAILED',
      summary: ok ? '' : '$ cargo test: exit code 101\ntest x failed',
      testsPassed: ok ? 1 : 0,
      failedTests: ok ? [] : ['x'],
    };
  }
}

/** Clippy answering from a queue of counts; an Error in the queue is thrown. */
class ScriptedClippy implements ClippyCounter {
  #answers: (ClippyCount | Error)[];
  constructor(answers: (ClippyCount | Error)[]) {
    this.#answers = answers;
  }
  async countClippy(): Promise<ClippyCount> {
    const answer = this.#answers.shift() ?? { warnings: 0 };
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

function runResult(runId: string, status: 'succeeded' | 'failed'): RunResult {
  return {
    run_id: runId,
    status,
    payload: status === 'succeeded' ? { summary: 'done' } : null,
    error: status === 'failed' ? { code: 'tool_failed', message: 'the model gave up' } : null,
    model: 'm',
    backend: 'b',
    steps: 2,
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    runlog: '/runs/x/runlog.jsonl',
  };
}

function task(id: string, text: string, done = false): OpenSpecTask {
  return { id, text, done, details: [], section: '1. Work', line: 1, parent: null };
}

function change(id: string, tasks: OpenSpecTask[]): EditableChange {
  return {
    id,
    tasksFile: `openspec/changes/${id}/tasks.md`,
    proposal: `# ${id}`,
    design: null,
    specs: [],
    tasks,
  };
}

function daemon(parts: {
  openspec: MemoryOpenSpec;
  git?: MemoryRepo;
  runner: ScriptedRunner;
  validator?: ScriptedValidator;
  clippy?: ClippyCounter;
  state?: MemoryState;
  maxAttempts?: number;
  retryBlocked?: boolean;
  openspecCli?: OpenSpecCli;
  archive?: boolean;
}) {
  const events: StampedDaemonEvent[] = [];
  let now = Date.parse('2026-11-24T00:00:00Z');
  const instance = new CompletionDaemon(
    {
      repo: '/repo',
      openspec: parts.openspec,
      git: parts.git ?? new MemoryRepo(),
      runner: parts.runner,
      validator: parts.validator ?? new ScriptedValidator([]),
      clippy: parts.clippy,
      openspecCli: parts.openspecCli,
      state: parts.state ?? new MemoryState(),
      clock: {
        now: () => {
          now += 10;
          return new Date(now);
        },
      },
      owner: { pid: 1, host: 'h' },
      onEvent: (event) => events.push(event),
    },
    {
      changes: [],
      once: true,
      intervalMs: 40,
      maxAttempts: parts.maxAttempts ?? 3,
      retryBlocked: parts.retryBlocked ?? false,
      backoffBaseMs: 10,
      // The baseline and the reruns have tests of their own (attempt-steps, daemon-baseline).
      baseline: false,
      validationReruns: 0,
      archive: parts.archive ?? false,
    },
  );
  return { instance, events };
}

describe('CompletionDaemon', () => {
  it('changes no state on a refused start: the state is read first and never written', async () => {
    const openspec = new MemoryOpenSpec([change('a', [task('1.1', 'A one')])]);
    const state = new MemoryState();
    await daemon({ openspec, runner: new ScriptedRunner(['failed']), state, maxAttempts: 1 }).instance.run(
      new AbortController().signal,
    );
    const before = structuredClone(state.state);
    const saves = state.saves;
    const git = new MemoryRepo();
    git.refuse = 'the tree has uncommitted changes';
    const runner = new ScriptedRunner([]);
    await expect(
      daemon({ openspec, git, runner, state }).instance.run(new AbortController().signal),
    ).rejects.toThrow(/uncommitted changes/);
    expect(state.saves).toBe(saves);
    expect(state.state).toEqual(before);
    expect(runner.texts).toEqual([]);
  });

  it('checks a change it finished with openspec validate --strict, and archives only one that passes', async () => {
    const said: string[] = [];
    const cli = (valid: boolean): OpenSpecCli => ({
      validate: async (id) => {
        said.push(`validate ${id}`);
        return { ok: valid, output: valid ? 'valid' : 'ERROR: missing scenario' };
      },
      archive: async (id) => {
        said.push(`archive ${id}`);
        return { ok: true, output: 'archived' };
      },
    });
    const openspec = new MemoryOpenSpec([
      change('a', [task('1.1', 'A one')]),
      change('b', [task('1.1', 'B one', true)]),
    ]);
    const git = new MemoryRepo();
    const { instance, events } = daemon({
      openspec,
      git,
      runner: new ScriptedRunner([]),
      openspecCli: cli(false),
      archive: true,
    });
    await instance.run(new AbortController().signal);
    // b was finished before: not checked again. a fails validation: reported, not archived.
    expect(said).toEqual(['validate a']);
    expect(events.find((e) => e.event === 'change_validated')).toMatchObject({
      ok: false,
      output: 'ERROR: missing scenario',
    });
    expect(git.commits).toHaveLength(1);

    const again = new MemoryOpenSpec([change('c', [task('1.1', 'C one')])]);
    const archived = daemon({
      openspec: again,
      git,
      runner: new ScriptedRunner([]),
      openspecCli: cli(true),
      archive: true,
    });
    await archived.instance.run(new AbortController().signal);
    expect(said.slice(1)).toEqual(['validate c', 'archive c']);
    expect(git.commits.at(-1)).toMatch(/^c: archive the change/);
    expect(archived.events.find((e) => e.event === 'change_archived')).toMatchObject({
      ok: true,
      commit: 'c3',
    });
  });

  it('blocks a task whose commit hook fails, restores the tree, and goes on with the next change', async () => {
    const openspec = new MemoryOpenSpec([
      change('a', [task('1.1', 'A one'), task('1.2', 'A two')]),
      change('b', [task('1.1', 'B one')]),
    ]);
    const git = new MemoryRepo();
    git.hookFails = true;
    const runner = new ScriptedRunner([]);
    const { instance, events } = daemon({ openspec, git, runner });
    const outcome = await instance.run(new AbortController().signal);
    expect(outcome).toEqual({ cancelled: false, blocked: 2, awaitingApproval: 0 });
    expect(git.restores).toBe(2);
    const blocked = events.filter((e) => e.event === 'task_blocked');
    expect(blocked.map((e) => (e.event === 'task_blocked' ? e.diagnostics : ''))).toEqual([
      'Committing the task failed: git commit failed: pre-commit said no',
      'Committing the task failed: git commit failed: pre-commit said no',
    ]);
    // a's 1.2 waited for 1.1; b went on.
    expect(runner.texts.map((t) => t.split(':')[0])).toEqual([
      'Implement task 1.1 of OpenSpec change "a"',
      'Implement task 1.1 of OpenSpec change "b"',
    ]);
  });

  it('spends no attempt while the backend is down and backs off doubling, capped at the interval', async () => {
    const openspec = new MemoryOpenSpec([change('a', [task('1.1', 'A one')])]);
    const runner = new ScriptedRunner([
      'backend_down',
      'backend_down',
      'backend_down',
      'backend_down',
      'ran',
    ]);
    const { instance, events } = daemon({ openspec, runner, maxAttempts: 1 });
    expect(await instance.run(new AbortController().signal)).toEqual({
      cancelled: false,
      blocked: 0,
      awaitingApproval: 0,
    });
    const waits = events.flatMap((e) => (e.event === 'backend_down' ? [e.backoff_s] : []));
    expect(waits).toEqual([0.01, 0.02, 0.04, 0.04]);
    const done = events.find((e) => e.event === 'task_done');
    expect(done?.event === 'task_done' && done.task.attempts).toBe(1);
    expect(events.some((e) => e.event === 'backend_up')).toBe(true);
  });

  it('feeds a failed run and failed tests back to the next attempt, and counts every attempt', async () => {
    const openspec = new MemoryOpenSpec([change('a', [task('1.1', 'A one', true), task('1.2', 'A two')])]);
    const runner = new ScriptedRunner(['failed', 'ran', 'ran']);
    const validator = new ScriptedValidator([false, true]);
    const { instance } = daemon({ openspec, runner, validator });
    await instance.run(new AbortController().signal);
    expect(runner.texts[0]).not.toContain('attempt 1 of 3');
    expect(runner.texts[0]).toContain('- [x] 1.1 A one');
    expect(runner.texts[1]).toContain('attempt 2 of 3');
    expect(runner.texts[1]).toContain('tool_failed: the model gave up');
    expect(runner.texts[2]).toContain('test x ... FAILED');
    expect(openspec.changes[0]!.tasks[1]!.done).toBe(true);
  });

  it('leaves a blocked task alone on the next start unless its text changed or --retry-blocked', async () => {
    const state = new MemoryState();
    const openspec = new MemoryOpenSpec([change('a', [task('1.1', 'A one')])]);
    const first = daemon({ openspec, runner: new ScriptedRunner(['failed']), state, maxAttempts: 1 });
    expect((await first.instance.run(new AbortController().signal)).blocked).toBe(1);

    const idle = new ScriptedRunner([]);
    await daemon({ openspec, runner: idle, state, maxAttempts: 1 }).instance.run(
      new AbortController().signal,
    );
    expect(idle.texts).toEqual([]);

    const retried = new ScriptedRunner([]);
    await daemon({ openspec, runner: retried, state, maxAttempts: 1, retryBlocked: true }).instance.run(
      new AbortController().signal,
    );
    expect(retried.texts).toHaveLength(1);

    const reworded = new MemoryOpenSpec([change('b', [task('1.1', 'B one')])]);
    const blockedAgain = daemon({
      openspec: reworded,
      runner: new ScriptedRunner(['failed']),
      state,
      maxAttempts: 1,
    });
    await blockedAgain.instance.run(new AbortController().signal);
    reworded.changes[0]!.tasks = [task('1.1', 'B one, said better')];
    const afterEdit = new ScriptedRunner([]);
    await daemon({ openspec: reworded, runner: afterEdit, state, maxAttempts: 1 }).instance.run(
      new AbortController().signal,
    );
    expect(afterEdit.texts).toHaveLength(1);
  });

  it('counts clippy before the first attempt and after the validated one; a clippy that fails is a null figure, never a failed task', async () => {
    const openspec = new MemoryOpenSpec([change('a', [task('1.1', 'A one'), task('1.2', 'A two')])]);
    const state = new MemoryState();
    const clippy = new ScriptedClippy([
      { warnings: 1 },
      { warnings: 3 },
      new Error('cargo clippy crashed'),
      { warnings: null, reason: 'cargo clippy ended: timeout' },
    ]);
    const validator = new ScriptedValidator([false, true, true]);
    const { instance, events } = daemon({
      openspec,
      runner: new ScriptedRunner([]),
      validator,
      clippy,
      state,
    });
    expect(await instance.run(new AbortController().signal)).toEqual({
      cancelled: false,
      blocked: 0,
      awaitingApproval: 0,
    });
    const [first, second] = state.state!.tasks;
    // Counted once before (not per attempt) and once after the attempt that validated.
    expect(first).toMatchObject({ attempts: 2, clippy_before: 1, clippy_after: 3, clippy_note: null });
    expect(second).toMatchObject({
      status: 'done',
      clippy_before: null,
      clippy_after: null,
      clippy_note: 'cargo clippy crashed; after the task: cargo clippy ended: timeout',
    });
    const done = events.find((e) => e.event === 'task_done');
    expect(done?.event === 'task_done' && [done.clippy_before, done.clippy_after]).toEqual([1, 3]);
  });

  it('has no clippy figures, and says why once, when clippy is not allowed', async () => {
    const openspec = new MemoryOpenSpec([change('a', [task('1.1', 'A one')])]);
    const state = new MemoryState();
    const refused = { warnings: null, reason: 'cargo clippy is not in the allowlist' } as const;
    const clippy = new ScriptedClippy([refused, refused]);
    await daemon({ openspec, runner: new ScriptedRunner([]), clippy, state }).instance.run(
      new AbortController().signal,
    );
    expect(state.state!.tasks[0]).toMatchObject({
      status: 'done',
      clippy_before: null,
      clippy_after: null,
      clippy_note: 'cargo clippy is not in the allowlist',
    });
  });

  it('restores the tree and stops when cancelled mid-run, leaving the task pending', async () => {
    const openspec = new MemoryOpenSpec([change('a', [task('1.1', 'A one')])]);
    const git = new MemoryRepo();
    const state = new MemoryState();
    const { instance } = daemon({ openspec, git, runner: new ScriptedRunner(['cancelled']), state });
    expect(await instance.run(new AbortController().signal)).toEqual({
      cancelled: true,
      blocked: 0,
      awaitingApproval: 0,
    });
    expect(git.restores).toBe(1);
    expect(git.commits).toEqual([]);
    expect(state.state?.tasks[0]?.status).toBe('pending');
  });
});
