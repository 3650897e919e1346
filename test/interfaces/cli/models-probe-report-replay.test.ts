import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelCard } from '../../../src/application/models/model-card.ts';
import { ROOT, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type ServedReport, serveReport } from '../../support/report-server.ts';
import { closedPortUrl } from '../../infrastructure/llm/llm-test-kit.ts';

/**
 * Issue 33: a probe report (`fabric models probe --report`) served as a scripted server, so the
 * quirks a user attaches to a bug become fixtures. The fixture was written by `fabric models probe
 * --report` against the behaving fakes (a native model and one that writes hermes text calls);
 * probing the served folder gives the same card.
 */
const FIXTURE = join(ROOT, 'test/fixtures/probe-reports/ollama-native-and-hermes');

describe('a probe report served as a scripted server', () => {
  let served: ServedReport | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await served?.stop();
    served = undefined;
    await sandbox?.cleanup();
  });

  const outcomes = (card: { probes: readonly { id: string; outcome: string }[] } | undefined) =>
    Object.fromEntries((card?.probes ?? []).map((probe) => [probe.id, probe.outcome]));

  it('probing the served folder gives the card the report holds, and a report of it again', async () => {
    served = await serveReport(FIXTURE);
    expect(served.models.map((m) => m.card.model).sort()).toEqual(['dialect:7b', 'native:7b']);
    const server = served.serverFor(served.models[0]!.card);
    sandbox = await makeSandbox();
    const report = await mkdtemp(join(tmpdir(), 'fabric-report-'));
    await rm(report, { recursive: true });
    const probe = await spawnFabric(
      ['models', 'probe', '--json', '--timeout', '20', '--report', report, '--config', sandbox.configPath],
      { env: { ...testEnv(sandbox, await closedPortUrl()), OLLAMA_HOST: server.url }, cwd: sandbox.dir },
    );
    expect(probe.exitCode, probe.stderr).toBe(0);
    const { cards } = JSON.parse(probe.stdout) as { cards: ModelCard[] };
    expect(cards).toHaveLength(2);
    for (const { card: recorded } of served.models) {
      const card = cards.find((c) => c.model === recorded.model);
      expect(card, recorded.model).toBeDefined();
      expect({
        tools: card?.tools,
        dialect: card?.dialect,
        score: card?.score,
        serverVersion: card?.serverVersion,
        modelFile: card?.modelFile,
      }).toEqual({
        tools: recorded.tools,
        dialect: recorded.dialect,
        score: recorded.score,
        serverVersion: recorded.serverVersion,
        modelFile: recorded.modelFile,
      });
      expect(outcomes(card)).toEqual(outcomes(recorded));
      expect(card?.probes.map((p) => p.detail)).toEqual(recorded.probes.map((p) => p.detail));
    }
    expect(cards.find((c) => c.model === 'dialect:7b')).toMatchObject({
      tools: 'dialect',
      dialect: 'hermes',
    });
    expect(cards.find((c) => c.model === 'native:7b')).toMatchObject({ tools: 'native', score: 1 });
    // Every request the probe sent was one the report recorded: none fell through to a 500.
    const answered = server.chatRequests().length;
    const recorded = served.models.reduce((sum, m) => sum + m.exchanges.length, 0);
    expect(answered).toBe(recorded);
    // The report of the replay holds the same exchanges' replies.
    const files = await readdir(report);
    expect(files.filter((f) => f.endsWith('.exchanges.json'))).toHaveLength(2);
    const again = await readFile(
      join(report, files.find((f) => f.includes('dialect_7b.exchanges'))!),
      'utf8',
    );
    expect(again).toContain('<tool_call>');
    await rm(report, { recursive: true, force: true });
  });

  it('answers a request the report never recorded with a 500 that says so', async () => {
    served = await serveReport(FIXTURE);
    const server = served.serverFor(served.models[0]!.card);
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'native:7b', messages: [{ role: 'user', content: 'Something else' }] }),
    });
    expect(response.status).toBe(500);
    expect(await response.text()).toContain('report server: no recorded exchange');
  });
});
