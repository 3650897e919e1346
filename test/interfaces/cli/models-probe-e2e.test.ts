import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelCard } from '../../../src/application/models/model-card.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { startFakeKeyed } from '../../support/fake-llm-compat.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import type { FakeModel } from '../../support/fake-llm-types.ts';
import { closedPortUrl } from '../../infrastructure/llm/llm-test-kit.ts';

/**
 * Issue 33: `fabric models probe` through the CLI, against models that behave rather than follow a
 * script (test/support/fake-llm-behaviour.ts): the probe tells them apart by what they do.
 */
describe('fabric models probe', () => {
  const servers: FakeLlmServer[] = [];
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
    await sandbox?.cleanup();
  });

  async function probe(args: string[], extraEnv: Record<string, string> = {}) {
    const ollama = await startFakeLlmServer({
      flavor: 'ollama',
      ollamaVersion: '0.12.6',
      models: [
        { id: 'native:7b', toolUse: true, behaviour: 'native', contextLength: 8192, paramSize: '7B' },
        { id: 'dialect:7b', toolUse: true, behaviour: 'dialect', dialect: 'hermes', contextLength: 8192 },
        { id: 'prose:3b', toolUse: true, behaviour: 'no_calls', contextLength: 8192 },
        { id: 'thinker:8b', toolUse: true, thinking: true, behaviour: 'native', contextLength: 8192 },
        // Listed at 32k, holds 4k: the window probe's request near the end is refused.
        { id: 'cramped:8b', toolUse: true, behaviour: 'native', contextLength: 32768, enforceWindow: 4096 },
        { id: 'silent:1b', toolUse: true, behaviour: 'never_answers', contextLength: 8192 },
      ],
    });
    servers.push(ollama);
    sandbox = await makeSandbox();
    const env = { ...testEnv(sandbox, await closedPortUrl()), OLLAMA_HOST: ollama.url, ...extraEnv };
    const result = await spawnFabric(['models', 'probe', ...args, '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    return { ...result, ollama, env, sandbox };
  }

  const outcomes = (card: ModelCard | undefined) =>
    Object.fromEntries((card?.probes ?? []).map((probe) => [probe.id, probe.outcome]));

  it('tells the native model, the dialect-only one, the one that cannot call, the thinker, the small window and the silent one apart', async () => {
    const { exitCode, stdout, stderr, sandbox } = await probe(['--json', '--timeout', '3']);
    expect(stderr).toContain('probing native:7b');
    expect(exitCode).toBe(0);
    const { cards } = JSON.parse(String(stdout)) as { cards: ModelCard[] };
    const card = (id: string) => cards.find((c) => c.model === id);

    expect(card('native:7b')).toMatchObject({ tools: 'native', dialect: null, score: 1 });
    expect(outcomes(card('native:7b'))).toMatchObject({
      native_call: 'pass',
      second_call: 'pass',
      finish_task: 'pass',
      json_arguments: 'pass',
      text_dialect: 'skipped',
      reasoning: 'pass',
      window: 'pass',
    });

    expect(card('dialect:7b')).toMatchObject({ tools: 'dialect', dialect: 'hermes' });
    expect(outcomes(card('dialect:7b'))).toMatchObject({
      native_call: 'fail',
      second_call: 'pass',
      text_dialect: 'pass',
    });

    expect(card('prose:3b')?.tools).toBe('none');
    expect(outcomes(card('prose:3b'))).toMatchObject({ native_call: 'fail', text_dialect: 'fail' });

    const thinker = card('thinker:8b')?.probes.find((p) => p.id === 'reasoning');
    expect(thinker?.detail).toContain('think: off honoured');
    expect(card('thinker:8b')?.tools).toBe('native');

    const window = card('cramped:8b')?.probes.find((p) => p.id === 'window');
    expect(window?.outcome).toBe('error');
    expect(window?.detail).toMatch(/window of 32768.*exceeds the context length/);

    // One bound, then the rest skipped: a model that never answers is reported, not waited for.
    expect(outcomes(card('silent:1b'))).toMatchObject({
      native_call: 'timeout',
      second_call: 'skipped',
      window: 'skipped',
    });
    expect(card('silent:1b')?.probes[0]?.detail).toBe('no answer within 3 s');

    // Every card is kept under the runs directory, one per model and server.
    expect((await readdir(join(sandbox.runsDir, 'models'))).length).toBe(6);
    const show = await spawnFabric(['models', 'show', 'dialect:7b', '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    expect(show.exitCode).toBe(0);
    expect(show.stdout).toContain('tool calls: dialect (text dialect hermes)');
    expect(show.stdout).toMatch(/fail\s+native_call\s+no native call; wrote get_time as text \(hermes\)/);
  });

  it('says how to get a card for a model never probed, and refuses a model no server has', async () => {
    const { exitCode, stderr, sandbox, env } = await probe(['nosuch:1b']);
    expect(exitCode).toBe(4);
    expect(stderr).toContain('No backend has "nosuch:1b" to probe');
    const show = await spawnFabric(['models', 'show', 'native:7b', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(show.exitCode).toBe(4);
    expect(show.stderr).toContain('`fabric models probe native:7b` measures it');
  });

  it('--report writes the card and raw exchanges with no key in them, even one a server echoed', async () => {
    const key = 'sk-proj-PROBEKEY-9a8b7c6d5e4f3a2b';
    // The catalog takes the key, chats refuse it and echo it (OpenAI's 401 names the key sent).
    const hosted = await startFakeKeyed({ key, chatKey: 'another-key', modelIds: ['gpt-5-mini'] });
    servers.push(hosted);
    sandbox = await makeSandbox({
      llm: {
        probe_timeout_ms: 1000,
        retry: { max_attempts: 1, base_delay_ms: 1, max_delay_ms: 2 },
        backends: [
          {
            kind: 'openai',
            url: `${hosted.url}/v1`,
            name: 'cloud',
            api_key_env: 'CLOUD_KEY',
            models: ['gpt-5-mini'],
          },
        ],
      },
    });
    const report = join(sandbox.dir, 'report');
    const result = await spawnFabric(
      ['models', 'probe', 'gpt-5-mini', '--report', report, '--config', sandbox.configPath],
      { env: { ...testEnv(sandbox, await closedPortUrl()), CLOUD_KEY: key }, cwd: sandbox.dir },
    );
    expect(result.exitCode).toBe(0);
    const files = await readdir(report);
    expect(files).toEqual(expect.arrayContaining(['README.txt']));
    const exchanges = files.find((f) => f.endsWith('.exchanges.json'));
    expect(exchanges).toBeDefined();
    const text = await readFile(join(report, exchanges ?? ''), 'utf8');
    expect(text).toContain('Incorrect API key provided');
    for (const file of files) expect(await readFile(join(report, file), 'utf8')).not.toContain(key);
    expect(hosted.chatRequests().length).toBeGreaterThan(0);
  });

  it('a card whose model file changed since the probe is flagged stale everywhere, and resolution says so', async () => {
    const big: FakeModel = {
      id: 'big:32b',
      toolUse: true,
      behaviour: 'native',
      paramSize: '32B',
      contextLength: 8192,
    };
    const ollama = await startFakeLlmServer({ flavor: 'ollama', ollamaVersion: '0.12.6', models: [big] });
    servers.push(ollama);
    sandbox = await makeSandbox();
    const env = { ...testEnv(sandbox, await closedPortUrl()), OLLAMA_HOST: ollama.url };
    const fabric = (args: string[]) =>
      spawnFabric([...args, '--config', sandbox?.configPath ?? ''], { env, cwd: sandbox?.dir ?? '' });
    const listed = async () => {
      const json = JSON.parse(String((await fabric(['models', '--json'])).stdout)) as {
        chosen: { reason: string };
        backends: { models: { card: { stale: string | null; modelFile: string } }[] }[];
      };
      return { chosen: json.chosen, card: json.backends.flatMap((backend) => backend.models)[0]?.card };
    };

    expect((await fabric(['models', 'probe', '--timeout', '5'])).exitCode).toBe(0);
    const fresh = await listed();
    const card = fresh.card;
    expect(card).toMatchObject({ stale: null, quantisation: 'Q4_K_M', serverVersion: '0.12.6' });
    expect(card?.modelFile).toMatch(/^[0-9a-f]{64}$/);
    expect(fresh.chosen.reason).not.toContain('stale');
    expect((await fabric(['models'])).stdout).not.toContain('(stale)');

    // `ollama pull big:32b` brought a new file.
    big.digest = 'feedface'.repeat(8);
    const after = await listed();
    expect(after.card?.stale).toBe(
      `stale: the model file changed (${card?.modelFile.slice(0, 12)} → feedfacefeed) since it was probed`,
    );
    // Still the measured best (the same model, most likely), but said to be stale, with the fix.
    expect(after.chosen.reason).toMatch(
      /^measured best: big:32b, probe score 1 .*\(card stale: the model file changed .*; `fabric models probe big:32b` measures it again\)$/,
    );
    expect((await fabric(['models'])).stdout).toMatch(/big:32b .* card native 6\/6 \S+ \(stale\)/);
    const shown = await fabric(['models', 'show', 'big:32b']);
    expect(shown.stdout).toContain('stale: the model file changed');
    expect(shown.stdout).toContain('`fabric models probe big:32b` measures it again');

    // Probing again measures the new file: the card is fresh.
    expect((await fabric(['models', 'probe', '--timeout', '5'])).exitCode).toBe(0);
    expect((await listed()).card?.stale).toBeNull();
  });

  it('a run without --model then picks the measured best where it used to pick the smallest; --model is still obeyed', async () => {
    const ollama = await startFakeLlmServer({
      flavor: 'ollama',
      models: [
        // Advertised tool-capable and small, so SPEC §5 picks it; it never calls a tool.
        { id: 'small:3b', toolUse: true, behaviour: 'no_calls', paramSize: '3B', contextLength: 8192 },
        { id: 'big:32b', toolUse: true, behaviour: 'native', paramSize: '32B', contextLength: 8192 },
      ],
    });
    servers.push(ollama);
    sandbox = await makeSandbox();
    const env = { ...testEnv(sandbox, await closedPortUrl()), OLLAMA_HOST: ollama.url };
    const fabric = (args: string[]) =>
      spawnFabric([...args, '--config', sandbox?.configPath ?? ''], { env, cwd: sandbox?.dir ?? '' });
    const chosen = async () =>
      (
        JSON.parse(String((await fabric(['models', '--json', '--specialist', 'units'])).stdout)) as {
          chosen: { id: string; reason: string };
        }
      ).chosen;

    expect((await chosen()).id).toBe('small:3b');
    expect((await fabric(['models', 'probe', '--timeout', '5'])).exitCode).toBe(0);
    const after = await chosen();
    expect(after.id).toBe('big:32b');
    const today = new Date().toISOString().slice(0, 10);
    expect(after.reason).toBe(
      `measured best: big:32b, probe score 1 with native tool calls (probed ${today}), on ollama ${ollama.url}`,
    );

    const listing = await fabric(['models']);
    expect(listing.stdout).toMatch(/small:3b .* card none 2\/7 /);
    expect(listing.stdout).toMatch(/big:32b .* card native 6\/6 /);

    const run = await fabric(['run', '--specialist', 'units', '--json', 'Call finish_task with "1.86 mi"']);
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(String(run.stdout))).toMatchObject({ status: 'succeeded', model: 'big:32b' });

    // --model is obeyed even for a model measured unable to call tools.
    const named = await fabric(['models', '--json', '--model', 'small:3b']);
    expect(JSON.parse(String(named.stdout)).chosen.id).toBe('small:3b');
  });
});
