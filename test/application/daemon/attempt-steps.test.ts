import { describe, expect, it } from 'vitest';
import {
  type AttemptInput,
  type AttemptPorts,
  type Judging,
  attemptTask,
  runStep,
  validateStep,
} from '../../../src/application/daemon/attempt-steps.ts';
import { freshRecord } from '../../../src/application/daemon/daemon-state.ts';
import {
  eventLog,
  fakeRunResult,
  QueuedRunner,
  QueuedValidator,
  steppingClock,
} from '../../support/daemon-fakes.ts';

function setup(
  runner = new QueuedRunner(),
  validator = new QueuedValidator(),
  judging: Partial<Judging> = {},
  changed: readonly string[] = ['src/lib.rs'],
) {
  const log = eventLog();
  let backendUps = 0;
  const ports: AttemptPorts = {
    runner,
    validator,
    clock: steppingClock(),
    emit: (event) => {
      log.emit(event);
    },
    changedFiles: async () => changed,
    backendUp: () => {
      backendUps += 1;
      log.emit({ event: 'backend_up' });
    },
  };
  const controller = new AbortController();
  const input: AttemptInput = {
    record: freshRecord('a', '1.1', 'A one'),
    attempt: 1,
    text: 'Implement task 1.1',
    runId: '20260101T000000Z-aaaaaa',
    resume: false,
    times: { runMs: 0, validationMs: 0, clippyMs: 0 },
    signal: controller.signal,
    judging: {
      baseline: new Set(),
      reruns: 0,
      tasksFile: 'openspec/changes/a/tasks.md',
      noEditOk: false,
      ...judging,
    },
  };
  return { ports, input, log, controller, runner, validator, backendUps: () => backendUps };
}

describe('the run step', () => {
  it('spends no attempt when the backend is down, and says why', async () => {
    const t = setup(new QueuedRunner([{ kind: 'backend_down', message: 'connection refused' }]));
    expect(await runStep(t.ports, t.input)).toEqual({ kind: 'backend_down', message: 'connection refused' });
    expect(t.input.record).toMatchObject({ attempts: 0, run_ids: [], tokens: 0 });
    expect(t.backendUps()).toBe(0);
    expect(t.log.events).toEqual([]);
    expect(t.input.times.runMs).toBe(10);
  });

  it('is cancelled when the runner is, or when the signal aborted during the run', async () => {
    const byRunner = setup(new QueuedRunner([{ kind: 'cancelled' }]));
    expect(await runStep(byRunner.ports, byRunner.input)).toEqual({ kind: 'cancelled' });
    const t = setup();
    t.runner.abortOnRun = t.controller;
    expect(await runStep(t.ports, t.input)).toEqual({ kind: 'cancelled' });
    expect(t.input.record.attempts).toBe(0);
  });

  it('counts a failed run as a spent attempt whose feedback names its status and error', async () => {
    const t = setup(new QueuedRunner([{ kind: 'ran', result: fakeRunResult('r1', 'failed') }]));
    const outcome = await runStep(t.ports, t.input);
    expect(outcome).toEqual({
      kind: 'failed',
      feedback: 'The run ended "failed" (tool_failed: the model gave up) without finishing the task.',
    });
    expect(t.input.record).toMatchObject({ attempts: 1, run_ids: ['r1'], tokens: 15 });
    // The backend is up before the run's end is reported.
    expect(t.log.kinds()).toEqual(['backend_up', 'run_end']);
  });

  it('is cancelled by a run that ended cancelled, after reporting its end', async () => {
    const t = setup(new QueuedRunner([{ kind: 'ran', result: fakeRunResult('r1', 'cancelled') }]));
    expect(await runStep(t.ports, t.input)).toEqual({ kind: 'cancelled' });
    expect(t.log.kinds()).toEqual(['backend_up', 'run_end']);
    expect(t.input.record.attempts).toBe(1);
  });

  it('hands a succeeded run on to validation', async () => {
    const t = setup(new QueuedRunner([{ kind: 'ran', result: fakeRunResult('r7') }]));
    expect(await runStep(t.ports, t.input)).toEqual({ kind: 'succeeded', runId: 'r7' });
  });
});

describe('the validation step', () => {
  it('fails the attempt with the commands output as feedback, and reports what failed', async () => {
    const t = setup(undefined, new QueuedValidator([false]));
    const outcome = await validateStep(t.ports, t.input, 'r1');
    expect(outcome).toEqual({
      kind: 'failed',
      feedback: 'The validation commands failed:\n$ cargo test\nexit code 101\ntest x ... FAILED',
    });
    expect(t.log.events).toEqual([
      expect.objectContaining({
        event: 'validation',
        ok: false,
        tests_passed: 0,
        summary: '$ cargo test: exit code 101\ntest x failed',
      }),
    ]);
    expect(t.input.times.validationMs).toBe(10);
  });

  it('validates the run with the tests that passed', async () => {
    const t = setup();
    expect(await validateStep(t.ports, t.input, 'r1')).toEqual({
      kind: 'validated',
      runId: 'r1',
      testsPassed: 4,
      preexisting: [],
      flaky: [],
    });
    expect(t.log.events).toEqual([expect.objectContaining({ event: 'validation', ok: true, report: null })]);
  });

  it('accepts tests failing at HEAD too, reporting them as pre-existing, and fails on a regression', async () => {
    const baseline = new Set(['gpu::renders']);
    const red = setup(undefined, new QueuedValidator([['gpu::renders']]), { baseline });
    expect(await validateStep(red.ports, red.input, 'r1')).toMatchObject({
      kind: 'validated',
      preexisting: ['gpu::renders'],
      flaky: [],
    });
    expect(red.log.events).toEqual([
      expect.objectContaining({ event: 'validation', ok: true, preexisting: ['gpu::renders'], rerun: false }),
    ]);
    const regression = setup(undefined, new QueuedValidator([['gpu::renders', 'area_works']]), { baseline });
    const outcome = await validateStep(regression.ports, regression.input, 'r1');
    expect(outcome.kind).toBe('failed');
    expect(outcome.kind === 'failed' && outcome.feedback).toMatch(
      /test area_works \.\.\. FAILED[\s\S]*fail at HEAD too, before your work: not yours to fix, leave them: gpu::renders$/,
    );
    // A build that fails is never excused by the baseline.
    const build = setup(undefined, new QueuedValidator([null]), { baseline });
    expect((await validateStep(build.ports, build.input, 'r1')).kind).toBe('failed');
  });

  it('runs a failing validation again before the attempt is spent, and labels a test that then passes flaky', async () => {
    const t = setup(undefined, new QueuedValidator([['timing_test'], true]), { reruns: 1 });
    expect(await validateStep(t.ports, t.input, 'r1')).toMatchObject({
      kind: 'validated',
      flaky: ['timing_test'],
    });
    expect(t.validator.calls).toBe(2);
    expect(t.log.events.map((e) => e.event === 'validation' && [e.ok, e.rerun])).toEqual([
      [false, true],
      [true, false],
    ]);
    // Failing twice: the attempt is spent, after one rerun only.
    const twice = setup(undefined, new QueuedValidator([false, false, true]), { reruns: 1 });
    expect((await validateStep(twice.ports, twice.input, 'r1')).kind).toBe('failed');
    expect(twice.validator.calls).toBe(2);
  });

  it('is cancelled, with nothing reported, when the signal aborted during the validation', async () => {
    const t = setup();
    t.validator.abortOnValidate = t.controller;
    expect(await validateStep(t.ports, t.input, 'r1')).toEqual({ kind: 'cancelled' });
    expect(t.log.events).toEqual([]);
  });
});

describe('an attempt', () => {
  it('runs then validates, and a failed run is never validated', async () => {
    const ok = setup();
    expect(await attemptTask(ok.ports, ok.input)).toEqual({
      kind: 'validated',
      runId: 'run1',
      testsPassed: 4,
      preexisting: [],
      flaky: [],
    });
    expect(ok.validator.calls).toBe(1);

    const failed = setup(new QueuedRunner([{ kind: 'ran', result: fakeRunResult('r1', 'max_steps') }]));
    const outcome = await attemptTask(failed.ports, failed.input);
    expect(outcome.kind).toBe('failed');
    expect(failed.validator.calls).toBe(0);
  });

  it('fails a run that changed nothing, or only tasks.md, without validating it', async () => {
    for (const changed of [[], ['openspec/changes/a/tasks.md']]) {
      const t = setup(undefined, undefined, {}, changed);
      const outcome = await attemptTask(t.ports, t.input);
      expect(outcome).toEqual({
        kind: 'failed',
        feedback: expect.stringMatching(/^The run finished without changing any file/),
      });
      expect(t.validator.calls).toBe(0);
    }
    // A parent whose sub-tasks are done may change nothing: their work is its work.
    const parent = setup(undefined, undefined, { noEditOk: true }, []);
    expect((await attemptTask(parent.ports, parent.input)).kind).toBe('validated');
  });
});
