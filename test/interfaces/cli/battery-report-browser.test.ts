import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext } from 'playwright-core';
import { CHROMIUM, chromiumMissing, launchChromium } from '../../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';
const hostile = '<img src="http://evil.example/pixel.png"><script>window.pwned = 1</script>';

const missing = chromiumMissing;
if (missing)
  console.warn(`battery report browser test skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

describe.skipIf(missing)('the HTML battery report in headless Chromium', () => {
  let sandbox: Sandbox;
  let server: FakeLlmServer;
  let context: BrowserContext;
  let profile: string;
  let report: string;
  let batteryId: string;
  const requested: string[] = [];

  beforeAll(async () => {
    sandbox = await makeSandbox({
      llm: { retry: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      // beta never finishes the feet task.
      respond: unitsResponder((model, task) =>
        model === BETA && task.includes('feet') ? 'never_finishes' : 'converts',
      ),
      models: [
        { id: ALPHA, toolUse: true, loaded: true },
        { id: BETA, toolUse: true, loaded: true },
      ],
    });
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'units-report',
        specialist: 'units',
        models: [ALPHA, BETA],
        max_steps: 3,
        tasks: [
          { id: 'km-to-mi', task: `Convert 3 km to miles ${hostile}` },
          { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
        ],
      }),
    );
    const result = await spawnFabric(['battery', file, '--json', '--report', 'report.html'], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
    expect(result.exitCode).toBe(0);
    batteryId = (JSON.parse(result.stdout) as { id: string }).id;
    report = join(sandbox.dir, 'report.html');
    profile = await mkdtemp(join(tmpdir(), 'fabric-chromium-'));
    context = await launchChromium(profile);
    context.on('request', (request) => requested.push(request.url()));
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await server?.stop();
    await sandbox?.cleanup();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('shows the matrix, the per-model scores and each failure, from the file alone', async () => {
    const page = await context.newPage();
    const url = pathToFileURL(report).href;
    await page.goto(url);
    const text = (selector: string) => page.locator(selector).first().textContent();
    expect(await text('h1')).toContain(`Battery units-report ${batteryId}`);
    // The matrix: a row per task, a column per model.
    const cell = (task: string, model: string) => `tr[data-task="${task}"] td[data-model="${model}"]`;
    expect(await text(`${cell('km-to-mi', ALPHA)} .mark`)).toMatch(/✓ pass/);
    expect(await text(`${cell('ft-to-m', BETA)} .mark`)).toMatch(/✗ fail/);
    expect(await text(`${cell('ft-to-m', BETA)} .check`)).toBe('status');
    // Why it failed, folded, opened by keyboard.
    const details = page.locator(`${cell('ft-to-m', BETA)} details`);
    expect(await details.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(false);
    await details.locator('summary').focus();
    await page.keyboard.press('Enter');
    expect(await details.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(true);
    expect(await details.locator('pre').textContent()).toContain(
      'expected succeeded, the run ended max_steps',
    );
    // Per model: pass rate and interval.
    const beta = `table.models tr[data-model="${BETA}"]`;
    expect(await page.locator(`${beta} td`).nth(1).textContent()).toBe('50%');
    expect(await text(`${beta} [data-figure="interval"]`)).toBe('9–91%');
    // Every failure, listed with its check and message.
    const failures = page.locator('ul.failures li');
    expect(await failures.count()).toBe(1);
    const failure = (await failures.first().textContent()) ?? '';
    expect(failure).toContain(`ft-to-m × ${BETA}: status`);
    expect(failure).toContain('expected succeeded, the run ended max_steps');
    // The model's and the task's text stayed text; nothing ran, nothing was fetched.
    expect(await text('tr[data-task="km-to-mi"] .task')).toContain('<script>window.pwned = 1</script>');
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('script').count()).toBe(0);
    expect(requested).toEqual([url]);
    await page.close();
  });
});
