import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { CHROMIUM, chromiumMissing, launchChromium } from '../../../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelCard } from '../../../../src/application/models/model-card.ts';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../../support/fabric-cli.ts';
import { type FakeLlmServer, type FakeModel, startFakeLlmServer } from '../../../support/fake-llm-server.ts';
import { closedPortUrl } from '../../../infrastructure/llm/llm-test-kit.ts';
import { type RunningApi, makeFabric, startApi } from '../http-harness.ts';

const missing = chromiumMissing;
if (missing)
  console.warn(`viewer models browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

/**
 * Issue 33: the viewer's models page, in headless Chromium, on the cards `fabric models probe`
 * wrote for models that behave (test/support/fake-llm-behaviour.ts).
 */
describe.skipIf(missing)('the viewer models page in headless Chromium', () => {
  let sandbox: Sandbox;
  let ollama: FakeLlmServer;
  let fabric: Fabric;
  let api: RunningApi;
  let context: BrowserContext;
  let profile: string;
  const native: FakeModel = { id: 'native:7b', toolUse: true, behaviour: 'native', contextLength: 8192 };
  const prose: FakeModel = { id: 'prose:3b', toolUse: true, behaviour: 'no_calls', contextLength: 8192 };

  beforeAll(async () => {
    ollama = await startFakeLlmServer({ flavor: 'ollama', ollamaVersion: '0.12.6', models: [native, prose] });
    sandbox = await makeSandbox();
    const closed = await closedPortUrl();
    const probe = await spawnFabric(['models', 'probe', '--timeout', '20', '--config', sandbox.configPath], {
      env: { ...testEnv(sandbox, closed), OLLAMA_HOST: ollama.url },
      cwd: sandbox.dir,
    });
    expect(probe.exitCode, probe.stderr).toBe(0);
    // A battery's mark on the native model's card, as `fabric battery` writes it when it ends.
    const dir = join(sandbox.runsDir, 'models');
    for (const file of await readdir(dir)) {
      const card = JSON.parse(await readFile(join(dir, file), 'utf8')) as ModelCard;
      if (card.model !== native.id) continue;
      const battery = { rust: { passRate: 0.75, runs: 4, at: '2026-11-27T10:00:00.000Z' } };
      await writeFile(join(dir, file), JSON.stringify({ ...card, battery }));
    }
    // `ollama pull native:7b` brought a new file since the probe: its card is stale.
    native.digest = 'feedface'.repeat(8);
    fabric = await makeFabric(sandbox, closed, { OLLAMA_HOST: ollama.url });
    api = await startApi(fabric);
    profile = await mkdtemp(join(tmpdir(), 'fabric-chromium-'));
    context = await launchChromium(profile);
  }, 90_000);

  afterAll(async () => {
    await context?.close();
    await api?.stop();
    await fabric?.close();
    await ollama?.stop();
    await sandbox?.cleanup();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('lists the cards from the nav: server, version, quantisation, probe date, each probe, battery, stale', async () => {
    const page = await context.newPage();
    await page.goto(`${api.url}/`);
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Models' }).click();
    await page.waitForURL(`${api.url}/models`);
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Models');
    const rows = page.locator('table.model-cards tbody tr');
    expect(await rows.count()).toBe(2);

    const nativeRow = page.locator('tr[data-model="native:7b"]');
    const cells = async (row: typeof nativeRow) =>
      (await row.locator('td').allTextContents()).map((text) => text.trim());
    const [model, server, version, quantisation, probed, tools, score] = await cells(nativeRow);
    expect({ model, server, version, quantisation, tools, score }).toEqual({
      model: 'native:7b',
      server: `ollama ${ollama.url}`,
      version: 'ollama 0.12.6',
      quantisation: 'Q4_K_M',
      tools: 'native',
      score: '1',
    });
    expect(probed).toMatch(/^\d{4}-\d\d-\d\d$/);
    expect(await nativeRow.locator('td[data-probe="native_call"]').textContent()).toBe('✓ pass');
    expect(await nativeRow.locator('td[data-probe="text_dialect"]').textContent()).toBe('– skipped');
    expect(await nativeRow.locator('td').nth(-2).textContent()).toBe('rust 0.75');
    expect(await nativeRow.locator('td.stale').textContent()).toBe('stale');
    expect(await nativeRow.getAttribute('data-stale')).toBe('yes');

    const proseRow = page.locator('tr[data-model="prose:3b"]');
    expect((await cells(proseRow))[5]).toBe('none');
    expect(await proseRow.locator('td[data-probe="native_call"]').textContent()).toBe('✗ fail');
    expect(await proseRow.locator('td.stale').textContent()).toBe('no');
    await page.close();
  });

  it("shows a card's detail: each probe with its detail and figures, battery marks, why it is stale", async () => {
    const page = await context.newPage();
    await page.goto(`${api.url}/models`);
    await page.getByRole('link', { name: 'native:7b' }).click();
    await page.waitForURL(/\/models\/ollama_/);
    expect(await page.locator('h1').textContent()).toBe('native:7b');
    const probes = page.locator('table.probes tbody tr');
    expect(await probes.count()).toBe(7);
    const call = page.locator('table.probes tr[data-probe="native_call"] td');
    expect(await call.nth(1).textContent()).toBe('✓ pass');
    expect(await call.nth(3).textContent()).toMatch(/ttft_ms \d+/);
    expect(await page.locator('ul.battery-marks li').allTextContents()).toEqual([
      'rust: pass rate 0.75 over 4 runs (2026-11-27)',
    ]);
    expect(await page.locator('dd.stale').textContent()).toMatch(
      /^stale: the model file changed \(\w+ → feedfacefeed\) since it was probed; fabric models probe native:7b measures it again$/,
    );
    await page.goto(`${api.url}/models/nosuch`);
    expect(await page.locator('h1').textContent()).toBe('No such card');
    await page.close();
  });
});
