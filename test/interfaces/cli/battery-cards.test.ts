import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ModelCard } from '../../../src/application/models/model-card.ts';
import { FileModelCards } from '../../../src/infrastructure/runlog/model-card-files.ts';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';

/**
 * Issue 33: a battery writes each model's pass rate for its specialist onto the model's cards, and
 * resolution then prefers the battery's measure to the probe score.
 */
describe('a battery marks the model cards', () => {
  let sandbox: Sandbox | undefined;
  let server: FakeLlmServer | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  /** A probe's card for a model: beta probed better than alpha. */
  function probed(model: string, baseUrl: string, score: number): ModelCard {
    return {
      model,
      backend: 'lm_studio',
      baseUrl,
      serverVersion: null,
      quantisation: 'Q4_K_M',
      probedAt: '2026-11-01T10:00:00.000Z',
      tools: 'native',
      dialect: null,
      score,
      probes: [{ id: 'native_call', outcome: 'pass', detail: 'one native call', figures: {}, exchanges: [] }],
      tokens: { prompt: 100, completion: 20 },
      battery: {},
    };
  }

  it('each model gets its pass rate for the specialist, and the battery-measured best is chosen', async () => {
    // alpha converts everything; beta never finishes the feet task.
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      respond: unitsResponder((model, task) =>
        model === BETA && task.includes('feet') ? 'never_finishes' : 'converts',
      ),
      models: [
        { id: ALPHA, toolUse: true, loaded: true },
        { id: BETA, toolUse: true, loaded: true },
      ],
    });
    sandbox = await makeSandbox({ loop: { max_steps: 4 } });
    const cards = new FileModelCards(sandbox.runsDir);
    await cards.save(probed(ALPHA, server.url, 0.5));
    await cards.save(probed(BETA, server.url, 1));
    const env = testEnv(sandbox, server.url);
    const fabric = (args: string[]) =>
      spawnFabric([...args, '--config', sandbox?.configPath ?? ''], { env, cwd: sandbox?.dir ?? '' });
    const chosen = async () =>
      (
        JSON.parse(String((await fabric(['models', '--json', '--specialist', 'units'])).stdout)) as {
          chosen: { id: string; reason: string };
        }
      ).chosen;
    expect((await chosen()).id).toBe(BETA);

    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'units-basics',
        specialist: 'units',
        models: [ALPHA, BETA],
        tasks: [
          { id: 'km-to-mi', task: 'Convert 3 km to miles', expect: { status: 'succeeded' } },
          { id: 'ft-to-m', task: 'Convert 10 feet to metres', expect: { status: 'succeeded' } },
        ],
      }),
    );
    const ran = await fabric(['battery', file]);
    expect(ran.exitCode).toBe(0);
    expect(ran.stderr).toContain(`model cards marked with units pass rates: ${ALPHA}, ${BETA}`);

    const shown = await fabric(['models', 'show', ALPHA, '--json']);
    const [card] = (JSON.parse(String(shown.stdout)) as { cards: ModelCard[] }).cards;
    expect(card?.battery.units).toMatchObject({ passRate: 1, runs: 2 });
    expect(card?.score).toBe(0.5);
    expect((await fabric(['models', 'show', BETA])).stdout).toMatch(
      /battery units: pass rate 0.5 over 2 runs/,
    );

    const after = await chosen();
    expect(after.id).toBe(ALPHA);
    expect(after.reason).toMatch(
      /^measured best: lab\/alpha-7b, battery pass rate 1 for units over 2 runs \(/,
    );
  });
});
