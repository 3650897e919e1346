import { describe, expect, it } from 'vitest';
import {
  type AttemptInput,
  type AttemptPorts,
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

function setup(runner = new QueuedRunner(), validator = new QueuedValidator()) {
  const log = eventLog();
  let backendUps = 0;
  const ports: AttemptPorts = {
    runner,
    validator,
    clock: steppingClock(),
    emit: (event) => {
      log.emit(event);
    },
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
    times: { runMs: 0, validationMs: 0, clippyMs: 0 },
    signal: controller.signal,
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
    });
    expect(t.log.events).toEqual([expect.objectContaining({ event: 'validation', ok: true, report: null })]);
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
    });
    expect(ok.validator.calls).toBe(1);

    const failed = setup(new QueuedRunner([{ kind: 'ran', result: fakeRunResult('r1', 'max_steps') }]));
    const outcome = await attemptTask(failed.ports, failed.input);
    expect(outcome.kind).toBe('failed');
    expect(failed.validator.calls).toBe(0);
  });
});
