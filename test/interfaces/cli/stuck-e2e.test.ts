import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { runUnits } from '../../support/units-run.ts';

/** SPEC §17: a model that repeats itself is told once, then the run ends `run_stuck`, long before max_steps. */
const call = (value: number): ScriptedTurn => ({
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value, from: 'km', to: 'm' } }] },
});
const REPORT: ScriptedTurn = {
  reply: {
    toolCalls: [{ name: 'finish_task', arguments: { summary: 'I kept converting.', answer: '1000 m' } }],
  },
};

describe('fabric run with a model that goes round in circles', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  async function run(script: ScriptedTurn[]) {
    sandbox = await makeSandbox();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script,
    });
    return runUnits(sandbox, server, 'lm_studio');
  }

  it('tells the model at the fourth identical call, and ends the run failed run_stuck at the eighth', async () => {
    const { result, events, exitCode, stderr } = await run([
      ...Array.from({ length: 8 }, () => call(1)),
      REPORT,
    ]);
    expect(exitCode).toBe(1);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({
      code: 'run_stuck',
      message: expect.stringMatching(/convert_units called 4 times in a row/),
    });
    expect(result.steps).toBe(9); // eight calls and the finish-only turn, well before max_steps (30)
    expect(result.payload).toEqual({ summary: 'I kept converting.', answer: '1000 m' });
    expect(
      events.filter((event) => event.kind === 'run_stuck').map((event) => [event.step, event.action]),
    ).toEqual([
      [4, 'warned'],
      [8, 'stopped'],
    ]);
    const fifth = JSON.stringify(server?.chatRequests()[4]?.body);
    expect(fifth).toContain('Doing it again will not change anything');
    expect(stderr).toMatch(/⟳ stuck: convert_units called 4 times in a row.*telling the model/);
    // Why it stopped is said once, on its ⟳ line, not again under the run's end (issue 34 item 9).
    expect(stderr.match(/convert_units called 4 times in a row/g)).toHaveLength(2);
    expect(stderr).toMatch(/⟳ stuck: convert_units called 4 times in a row.*ending the run/);
    // `fabric runs show` gives the model's report as its claim, not as the run's result.
    const shown = await runFabricInProcess(['runs', 'show', result.run_id, '--config', sandbox!.configPath], {
      env: testEnv(sandbox!, server!.url),
      cwd: sandbox!.dir,
    });
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toMatch(
      /the model's unverified claim \(the run failed run_stuck\):\n {2}I kept converting\./,
    );
    expect(shown.stdout).not.toMatch(/^result:/m);
  });

  it('sees two calls alternating, and lets a model that changes course after the word go on', async () => {
    const alternating = Array.from({ length: 8 }, (_, i) => call(i % 2 === 0 ? 1 : 2));
    const recovered = await run([...alternating, call(3), REPORT]);
    expect(recovered.result.status).toBe('succeeded');
    expect(recovered.events.find((event) => event.kind === 'run_stuck')).toMatchObject({
      pattern: 'alternate',
      action: 'warned',
    });
  });
});
