import { mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatteryState, CellResult } from '../../../../src/application/battery/battery-types.ts';
import { emptyState, freshRecord } from '../../../../src/application/daemon/daemon-state.ts';
import { BatteryStateFiles } from '../../../../src/infrastructure/battery/battery-state-file.ts';
import { StateFile } from '../../../../src/infrastructure/daemon/state-file.ts';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import { createApp } from '../../../../src/interfaces/http/app.ts';
import { type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import { tempDir } from '../../../support/temp-dirs.ts';
import { makeFabric } from '../http-harness.ts';

const hostile = '<img src=x onerror="alert(1)"><script>pwned()</script>';
const BATTERY = 'bat-20260101T000000Z-abc123';

/** A done cell; `fields` makes it fail or not run. */
function cell(task: string, model: string, fields: Partial<CellResult> = {}): CellResult {
  return {
    task,
    model,
    repeat: 1,
    status: 'succeeded',
    passed: true,
    failed_check: null,
    error: null,
    run_id: `run-${task}-${model.replace(/\W/g, '')}`,
    steps: 3,
    tokens: 420,
    seconds: 2.5,
    checks: [],
    started_at: '2026-01-01T00:00:01.000Z',
    ended_at: '2026-01-01T00:00:03.500Z',
    ...fields,
  };
}

/** A battery of two tasks and two models, three cells done (one failing its check), one to go. */
function batteryState(id: string, status: BatteryState['status']): BatteryState {
  return {
    version: 1,
    plan: {
      id,
      name: 'units-basics',
      specialist: 'units',
      workspace: undefined,
      models: ['lab/alpha', 'lab/beta'],
      repeat: 1,
      maxSteps: undefined,
      tasks: [
        {
          id: 'km',
          task: `Convert 3 km ${hostile}`,
          expect: { status: 'succeeded', commands: [], files_contain: {} },
        },
        { id: 'ft', task: 'Convert 10 ft', expect: { status: 'succeeded', commands: [], files_contain: {} } },
      ],
    },
    file: '/tmp/battery.yaml',
    status,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:09.000Z',
    cells: [
      cell('km', 'lab/alpha'),
      cell('km', 'lab/beta', {
        passed: false,
        failed_check: 'command: cargo test',
        error: `test failed: ${hostile}`,
        checks: [
          { check: 'status', outcome: 'passed', message: 'succeeded' },
          { check: 'command: cargo test', outcome: 'failed', message: `exit 101 ${hostile}` },
        ],
      }),
      cell('ft', 'lab/alpha', {
        status: 'not_run',
        passed: false,
        failed_check: 'run',
        error: 'lab/alpha is not loaded on any server',
        run_id: null,
        steps: 0,
        tokens: 0,
        seconds: 0,
      }),
    ],
  };
}

describe('the battery and daemon pages', () => {
  let sandbox: Sandbox;
  let fabric: Fabric;
  beforeAll(async () => {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
  });
  afterAll(async () => {
    await fabric.close();
    await sandbox.cleanup();
  });
  const get = (path: string) => createApp({ fabric, requireToken: false }).request(`http://127.0.0.1${path}`);

  it('says how to start a daemon when none has worked with this runs directory', async () => {
    const response = await get('/daemon');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('<code>fabric daemon --repo DIR</code>');
    expect(text).toContain('<a href="/daemon" aria-current="page">Daemon</a>');
    expect(text).toContain('data-refresh-ms="5000"');
  });

  it('shows per change the done, blocked and pending tasks with their runs, commits and figures, escaped', async () => {
    const repo = await realpath(await tempDir('daemon-page-'));
    await mkdir(join(repo, 'openspec/changes/alpha'), { recursive: true });
    await writeFile(
      join(repo, 'openspec/changes/alpha/tasks.md'),
      `## 1. Region\n- [x] 1.1 First\n- [ ] 1.2 Second ${hostile}\n- [ ] 1.3 Third\n`,
    );
    const state = emptyState(repo, new Date());
    state.tasks.push(
      Object.assign(freshRecord('alpha', '1.1', 'First'), {
        status: 'done' as const,
        attempts: 1,
        run_ids: ['run-one'],
        models: ['big/model'],
        commit: '0123456789abcdef0123',
        seconds: 42,
        tokens: 1200,
        clippy_before: 0,
        clippy_after: 1,
        preexisting_failures: ['tests::needs_a_gpu'],
        flaky_tests: ['timing::tests::<tick>'],
      }),
      Object.assign(freshRecord('alpha', '1.2', `Second ${hostile}`), {
        status: 'blocked' as const,
        attempts: 3,
        run_ids: ['run-two', 'run-three', 'run-four'],
        models: ['small/model', 'small/model', 'big/model'],
        diagnostics: `error[E0425]: ${hostile}`,
        clippy_note: 'cargo clippy exited with code 101',
      }),
      // Its run parked on an approval (SPEC §19): the run and where to answer it.
      Object.assign(freshRecord('alpha', '1.3', 'Third'), {
        status: 'awaiting_approval' as const,
        run_in_flight: 'run-five',
        parked: {
          run_id: 'run-five',
          approval_id: 'ap-1',
          call: `cargo tree ${hostile}`,
          ref: 'refs/fabric/parked/run-five',
          since: '2026-11-28T00:00:00Z',
        },
      }),
    );
    state.backend = { state: 'down', last_ok: null, failures: 2, backoff_s: 8, last_error: 'refused' };
    await new StateFile(sandbox.runsDir, repo).save(state);

    const response = await get('/daemon');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain('<script>pwned');
    expect(text).not.toContain('<img src=x');
    expect(text).toContain('Second &lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    expect(text).toContain('error[E0425]: &lt;img');
    expect(text).toContain('1 done · 0 pending · 1 blocked · 1 awaiting approval');
    expect(text).toMatch(
      /data-task="1.3" data-status="awaiting_approval">[\s\S]*?waits for approval of <code>cargo tree &lt;img[\s\S]*?<a href="\/runs\/run-five">answer it on the run's page<\/a>[\s\S]*?\? awaiting approval[\s\S]*?<a class="mono" href="\/runs\/run-five">/,
    );
    expect(text).toMatch(
      /data-task="1.1" data-status="done">[\s\S]*?✓ done[\s\S]*?<a class="mono" href="\/runs\/run-one">/,
    );
    expect(text).toMatch(
      /data-task="1.2" data-status="blocked">[\s\S]*?✗ blocked[\s\S]*?<td class="num">3<\/td>/,
    );
    expect(text).toContain('0123456789ab');
    expect(text).toContain('✗ down · 2 failures · backing off 8 s');
    expect(text).toContain(
      '42.0 s · 1200 tokens · clippy warnings 0 → 1 · pre-existing failures (red at HEAD): tests::needs_a_gpu · flaky: timing::tests::&lt;tick&gt;',
    );
    expect(text).toContain('clippy: cargo clippy exited with code 101');
    // Escalation: each model's success rate, in the order the models were used.
    expect(text).toMatch(
      /Per model[\s\S]*big\/model<\/span>: 50% of 2 attempts · 1 task done[\s\S]*small\/model<\/span>: 0% of 2 attempts · 0 tasks done/,
    );
  });

  it('shows the matrix: a row per task, a column per model, each cell passed or failed with its check', async () => {
    await new BatteryStateFiles(sandbox.runsDir).save(batteryState(BATTERY, 'running'));
    const response = await get(`/batteries/${BATTERY}`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain('<script>pwned');
    expect(text).not.toContain('<img src=x');
    expect(text).toContain('Convert 3 km &lt;img src=x');
    expect(text).toContain('<th scope="col">lab/alpha</th><th scope="col">lab/beta</th>');
    const cellOf = (task: string, model: string) =>
      new RegExp(`<tr data-task="${task}">[\\s\\S]*?<td data-model="${model}">([\\s\\S]*?)</td>`).exec(
        text,
      )?.[1] ?? '';
    expect(cellOf('km', 'lab/alpha')).toContain('<a href="/runs/run-km-labalpha">✓ pass</a>');
    expect(cellOf('km', 'lab/alpha')).toContain('3 steps · 420 tokens · 2.5 s');
    expect(cellOf('km', 'lab/beta')).toContain('✗ fail');
    expect(cellOf('km', 'lab/beta')).toContain('<span class="check">command: cargo test</span>');
    expect(cellOf('km', 'lab/beta')).toContain('test failed: &lt;img');
    expect(cellOf('km', 'lab/beta')).toContain('✓ <span class="check">status</span>');
    expect(cellOf('km', 'lab/beta')).toContain(
      '✗ <span class="check">command: cargo test</span> <span class="meta">exit 101 &lt;img',
    );
    expect(cellOf('ft', 'lab/alpha')).toContain('✗ not run');
    expect(cellOf('ft', 'lab/alpha')).toContain('lab/alpha is not loaded on any server');
    expect(cellOf('ft', 'lab/beta')).toContain('… waiting');
    // The per-model scores, and the page asks again while the battery runs.
    expect(text).toMatch(
      /<th scope="row">lab\/alpha<\/th>\s*<td class="num">1\/2<\/td>\s*<td class="num" data-figure="pass-rate">50%<\/td>/,
    );
    expect(text).toContain('data-refresh-ms="2000"');
  });

  it('lists the batteries, and stops asking again once none runs', async () => {
    const other = 'bat-20260102T000000Z-def456';
    await new BatteryStateFiles(sandbox.runsDir).save(batteryState(other, 'done'));
    const list = await (await get('/batteries')).text();
    expect(list.indexOf(`/batteries/${other}`)).toBeLessThan(list.indexOf(`/batteries/${BATTERY}`));
    expect(list).toContain('data-refresh-ms');
    const done = await (await get(`/batteries/${other}`)).text();
    expect(done).toContain('✓ done');
    expect(done).not.toContain('data-refresh-ms');
    expect(done).toContain('– not run');
  });

  it('shows each model’s 95% interval, pass^k and flip rate over repeats', async () => {
    const id = 'bat-20260103T000000Z-aaa111';
    const state = batteryState(id, 'done');
    const flaky = [true, false, true].map((passed, i) =>
      cell('km', 'lab/beta', {
        repeat: i + 1,
        passed,
        failed_check: passed ? null : 'status',
        status: passed ? 'succeeded' : 'max_steps',
      }),
    );
    const facts = {
      tools_called: ['convert_units'],
      native_calls: 2,
      recovered_calls: { qwen3_xml: 1 },
      reasoning_tokens: 40,
      empty_turns: 1,
      window_tokens: 8192,
      profile: ['lab/alpha*', 'lab/*'],
      profile_settings: { temperature: 0.3 },
      seconds: 2.5,
    };
    const steady = [1, 2, 3].map((repeat) => cell('km', 'lab/alpha', { repeat, facts }));
    await new BatteryStateFiles(sandbox.runsDir).save({
      ...state,
      plan: { ...state.plan, repeat: 3, tasks: state.plan.tasks.slice(0, 1) },
      cells: [...steady, ...flaky],
    });
    const text = await (await get(`/batteries/${id}`)).text();
    expect(text).toContain('pass^3</abbr></th>');
    const row = (model: string) =>
      new RegExp(`<tr data-model="${model}">([\\s\\S]*?)</tr>`).exec(text)?.[1] ?? '';
    // Wilson, 2/3: 21–94%; 3/3: 44–100%.
    expect(row('lab/beta')).toContain('<td class="num" data-figure="interval">21–94%</td>');
    expect(row('lab/beta')).toContain('<td class="num" data-figure="pass-hat-k">0%</td>');
    expect(row('lab/beta')).toContain('<td class="num" data-figure="flip-rate">100%</td>');
    expect(row('lab/alpha')).toContain('<td class="num" data-figure="interval">44–100%</td>');
    expect(row('lab/alpha')).toContain('<td class="num" data-figure="flip-rate">0%</td>');
    // How each model worked, summed over its cells.
    const work = /<table class="work"[\s\S]*?<\/table>/.exec(text)?.[0] ?? '';
    expect(work).toContain('<td data-figure="profile" title="temperature: 0.3">lab/alpha*, lab/*</td>');
    expect(work).toContain('<td class="num" data-figure="window">8192</td>');
    expect(work).toContain('<td data-figure="calls">6 native · 3 recovered (qwen3_xml 3)</td>');
    expect(work).toContain('<td class="num" data-figure="reasoning">120</td>');
    expect(work).toContain('<td class="num" data-figure="empty-turns">3</td>');
  });

  it('answers a not-found page for an unknown or malformed battery id', async () => {
    for (const id of ['bat-20200101T000000Z-nope00', '..%2F..%2Fetc', '%3Cscript%3E']) {
      const response = await get(`/batteries/${id}`);
      expect(response.status).toBe(404);
      const text = await response.text();
      expect(text).toContain('<h1>Battery not found</h1>');
      expect(text).not.toContain('<script>');
    }
  });
});
