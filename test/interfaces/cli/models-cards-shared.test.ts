import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelCard } from '../../../src/application/models/model-card.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { closedPort, createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';

/**
 * Issue 33: model cards in the control plane (migration 13). Two machines share a Postgres control
 * plane, each with its own runs directory: what one probed, the other lists, shows and chooses by.
 */
describe('model cards in the control plane', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function fakeOllama(): Promise<FakeLlmServer> {
    const ollama = await startFakeLlmServer({
      flavor: 'ollama',
      models: [
        // Advertised tool-capable and small, so SPEC §5 picks it; it never calls a tool.
        { id: 'small:3b', toolUse: true, behaviour: 'no_calls', paramSize: '3B', contextLength: 8192 },
        { id: 'big:32b', toolUse: true, behaviour: 'native', paramSize: '32B', contextLength: 8192 },
      ],
    });
    cleanups.push(() => ollama.stop());
    return ollama;
  }

  async function machine(dsn: string, ollama: FakeLlmServer) {
    const sandbox: Sandbox = await makeSandbox({ control: { enabled: true, dsn } });
    cleanups.push(() => sandbox.cleanup());
    const env = { ...testEnv(sandbox, 'http://127.0.0.1:9'), OLLAMA_HOST: ollama.url };
    return {
      sandbox,
      fabric: (args: string[]) =>
        spawnFabric([...args, '--config', sandbox.configPath], { env, cwd: sandbox.dir }),
    };
  }

  it('a card probed on one machine is listed, shown and chosen by on another sharing the database', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const ollama = await fakeOllama();
    const a = await machine(db.dsn, ollama);
    const b = await machine(db.dsn, ollama);

    const probed = await a.fabric(['models', 'probe', '--timeout', '5']);
    expect(probed.stderr).not.toContain('control plane');
    expect(probed.exitCode).toBe(0);

    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end({ timeout: 2 }));
    const rows = await sql<{ model: string; card: ModelCard }[]>`
      select model, card from control.model_cards order by model`;
    expect(rows.map((row) => row.model)).toEqual(['big:32b', 'small:3b']);
    expect(rows[0]?.card).toMatchObject({ model: 'big:32b', tools: 'native', backend: 'ollama' });
    // The raw exchanges stay in the card files (and a --report), not in the shared table.
    expect(rows[0]?.card.probes.every((probe) => probe.exchanges.length === 0)).toBe(true);

    // Machine b has no card file of its own.
    await expect(readdir(join(b.sandbox.runsDir, 'models'))).rejects.toThrow();
    const listed = await b.fabric(['models', '--json', '--specialist', 'units']);
    expect(listed.exitCode).toBe(0);
    const json = JSON.parse(String(listed.stdout)) as {
      chosen: { id: string; reason: string };
      backends: { models: { id: string; card: { tools: string } | null }[] }[];
    };
    expect(json.chosen.id).toBe('big:32b');
    expect(json.chosen.reason).toMatch(/^measured best: big:32b, probe score 1 with native tool calls/);
    const cardOf = (id: string) =>
      json.backends.flatMap((backend) => backend.models).find((m) => m.id === id)?.card;
    expect(cardOf('small:3b')?.tools).toBe('none');

    const shown = await b.fabric(['models', 'show', 'big:32b']);
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toContain('tool calls: native');

    // A run on machine b without --model takes the card machine a measured.
    const run = await b.fabric(['run', '--specialist', 'units', '--json', 'Call finish_task with "1.86 mi"']);
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(String(run.stdout))).toMatchObject({ status: 'succeeded', model: 'big:32b' });

    // A probe on machine b rewrites the shared row with its newer card.
    expect((await b.fabric(['models', 'probe', 'big:32b', '--timeout', '5'])).exitCode).toBe(0);
    const [again] = await sql<{ probed_at: Date }[]>`
      select probed_at from control.model_cards where model = 'big:32b'`;
    const bCard = (
      JSON.parse(String((await b.fabric(['models', 'show', 'big:32b', '--json'])).stdout)) as {
        cards: ModelCard[];
      }
    ).cards[0];
    expect(again?.probed_at.toISOString()).toBe(bCard?.probedAt);
  });

  it('a control plane that is down leaves the cards in the runs directory, and says so', async () => {
    const ollama = await fakeOllama();
    const down = await machine(`postgres://postgres@127.0.0.1:${await closedPort()}/nothing`, ollama);
    const probed = await down.fabric(['models', 'probe', 'big:32b', '--timeout', '5']);
    expect(probed.exitCode).toBe(0);
    expect(probed.stderr).toContain('model card for big:32b kept in the runs directory only');
    expect((await readdir(join(down.sandbox.runsDir, 'models'))).length).toBe(1);

    const listed = await down.fabric(['models', '--json', '--specialist', 'units']);
    expect(listed.exitCode).toBe(0);
    expect(JSON.parse(String(listed.stdout)).chosen.id).toBe('big:32b');
    expect(listed.stderr).toContain('model cards read from the runs directory only');
  });
});
