import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { writeFile } from 'node:fs/promises';
import type { FakeChatMessage, ScriptedTurn } from '../../support/fake-llm-server.ts';
import { type UnitsBehaviour, unitsResponder } from '../../support/battery-fakes.ts';
import { makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const STEADY = 'lab/steady-7b';
const FLAKY = 'lab/flaky-7b';

let sandbox: Sandbox;
let server: FakeLlmServer;

/**
 * STEADY converts every time; FLAKY converts km on its 1st and 3rd runs of it and never finishes
 * on the 2nd, and converts feet every time. A run's first request (no assistant turn yet) picks
 * its behaviour; cells run one at a time.
 */
function flakyResponder(): (request: {
  model: string;
  messages: readonly FakeChatMessage[];
}) => ScriptedTurn {
  const runsOf = new Map<string, number>();
  const current = new Map<string, UnitsBehaviour>();
  const units = unitsResponder((model, task) => current.get(`${model}|${task}`) ?? 'converts');
  return (request) => {
    const task = request.messages.find((m) => m.role === 'user')?.content ?? '';
    const key = `${request.model}|${task}`;
    if (!request.messages.some((m) => m.role === 'assistant')) {
      const run = (runsOf.get(key) ?? 0) + 1;
      runsOf.set(key, run);
      const flaky = request.model === FLAKY && task.includes('km') && run === 2;
      current.set(key, flaky ? 'never_finishes' : 'converts');
    }
    return units(request);
  };
}

beforeEach(async () => {
  sandbox = await makeSandbox({
    llm: { retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
  });
  server = await startFakeLlmServer({
    flavor: 'lm_studio',
    respond: flakyResponder(),
    models: [
      { id: STEADY, toolUse: true, loaded: true },
      { id: FLAKY, toolUse: true, loaded: true },
    ],
  });
});

afterEach(async () => {
  await server.stop();
  await sandbox.cleanup();
});

interface JsonModel {
  model: string;
  passed: number;
  total: number;
  pass_at_1: number | null;
  pass_hat_k: number | null;
  flip_rate: number | null;
  interval: { low: number; high: number } | null;
}

describe('fabric battery with repeats', () => {
  it('shows a flaky model’s pass@1, pass^k, flip rate and 95% interval, in JSON, the report and the text', async () => {
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'units-repeats',
        specialist: 'units',
        models: [STEADY, FLAKY],
        repeat: 3,
        max_steps: 3,
        tasks: [
          { id: 'km-to-mi', task: 'Convert 3 km to miles' },
          { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
        ],
      }),
    );
    const env = testEnv(sandbox, server.url);
    const result = await spawnFabric(
      ['battery', file, '--json', '--report', 'report.md', '--concurrency', '1'],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(result.stderr).toMatch(/battery bat-/);
    expect(result.exitCode).toBe(0);
    const json = JSON.parse(result.stdout) as { id: string; models: JsonModel[] };
    const [steady, flaky] = json.models as [JsonModel, JsonModel];
    expect(steady).toMatchObject({
      model: STEADY,
      passed: 6,
      total: 6,
      pass_at_1: 1,
      pass_hat_k: 1,
      flip_rate: 0,
      // Wilson, 6/6: 0.61–1.
      interval: { low: 0.6097, high: 1 },
    });
    expect(flaky).toMatchObject({
      model: FLAKY,
      passed: 5,
      total: 6,
      pass_at_1: 0.833,
      pass_hat_k: 0.5,
      flip_rate: 0.5,
      // Wilson, 5/6: 0.436–0.970.
      interval: { low: 0.4365, high: 0.9699 },
    });
    const report = await readFile(join(sandbox.dir, 'report.md'), 'utf8');
    expect(report).toContain('| model | passed | 95% CI | pass^3 | flip rate |');
    // Under the terminal's matrix, the same per model.
    expect(result.stderr).toMatch(/^model +passed +95% CI +pass\^3 +flip rate +median steps/m);
    expect(result.stderr).toMatch(new RegExp(`^${FLAKY} +5/6 \\(83%\\) +44–97% +50% +50% `, 'm'));
    expect(report).toContain(`| ${FLAKY} | 5/6 (83%) | 44–97% | 50% | 50% |`);

    // Without --json, a line per model says the same.
    const text = await spawnFabric(['battery', '--resume', json.id], { env, cwd: sandbox.dir });
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toContain(
      `${FLAKY}: 5/6 passed · pass@1 83% (95% CI 44–97%) · pass^3 50% · flip rate 50%`,
    );
  });
});
