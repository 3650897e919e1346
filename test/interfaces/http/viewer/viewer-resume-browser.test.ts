import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { CHROMIUM, chromiumMissing, launchChromium } from '../../../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import {
  type FakeLlmServer,
  type ScriptedTurn,
  startFakeLlmServer,
} from '../../../support/fake-llm-server.ts';
import { type RunningApi, makeFabric, postJson, startApi } from '../http-harness.ts';

const TOKEN = 'resume-viewer-token';
const auth = { authorization: `Bearer ${TOKEN}` };

const convert = (value: number): ScriptedTurn => ({
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value, from: 'km', to: 'mi' } }] },
});
const finish: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted', answer: '1.243 mi' } }] },
};

const missing = chromiumMissing;
if (missing)
  console.warn(`viewer resume tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

// Issue 31 (SPEC §18): the run page's Resume button goes on with a run that used its steps, with
// the cookie the viewer signed in with (no token in the page); a refusal shows its reason.
describe.skipIf(missing)("the run viewer's Resume button in headless Chromium", () => {
  let sandbox: Sandbox;
  let server: FakeLlmServer;
  let fabric: Fabric;
  let api: RunningApi;
  let context: BrowserContext;
  let profile: string;

  async function status(id: string): Promise<string> {
    const run = (await (await fetch(`${api.url}/v1/runs/${id}`, { headers: auth })).json()) as {
      status: string;
    };
    return run.status;
  }

  async function settled(id: string): Promise<string> {
    for (;;) {
      const now = await status(id);
      if (now !== 'running') return now;
      await new Promise((done) => setTimeout(done, 50));
    }
  }

  async function start(task: string, maxSteps: number): Promise<string> {
    const response = await postJson(
      `${api.url}/v1/runs`,
      { specialist: 'units', task, max_steps: maxSteps },
      auth,
    );
    expect(response.status).toBe(202);
    return ((await response.json()) as { run_id: string }).run_id;
  }

  beforeAll(async () => {
    sandbox = await makeSandbox({
      specialists: { units: { builder: `${EXAMPLE_PACK}#buildPack`, description: 'unit conversions' } },
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      byTask: [
        { match: 'Convert 2 km', script: [convert(2), convert(2), finish] },
        { match: 'Convert 3 km', script: [convert(3), convert(3)] },
        { match: 'Convert 4 km', script: [convert(4), convert(4)] },
        { match: 'Convert 1 km', script: [finish] },
      ],
    });
    fabric = await makeFabric(sandbox, server.url);
    api = await startApi(fabric, TOKEN);
    profile = await mkdtemp(join(tmpdir(), 'fabric-chromium-resume-'));
    context = await launchChromium(profile);
    const page = await context.newPage();
    await page.goto(`${api.url}/?token=${TOKEN}`);
    await page.close();
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await api?.stop();
    await fabric?.close();
    await server?.stop();
    await sandbox?.cleanup();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('goes on with a run that used its steps, and the page follows it to its end', async () => {
    const id = await start('Convert 2 km to miles', 1);
    expect(await settled(id)).toBe('max_steps');
    const page = await context.newPage();
    await page.goto(`${api.url}/runs/${id}`);
    await page.fill('#resume-steps', '3');
    await page.click('#resume-button');
    await page.waitForFunction(
      () => document.getElementById('run-status')?.textContent?.includes('succeeded'),
      null,
      {
        timeout: 60_000,
      },
    );
    expect(await status(id)).toBe('succeeded');
    expect(await page.locator('#resume-form').count()).toBe(0);
    await page.close();
  });

  it('shows no button on a run that succeeded, and a refusal with its reason', async () => {
    const done = await start('Convert 1 km to miles', 5);
    expect(await settled(done)).toBe('succeeded');
    const page = await context.newPage();
    await page.goto(`${api.url}/runs/${done}`);
    expect(await page.locator('#resume-form').count()).toBe(0);
    // A run that used its steps, asked to go on with none more: the server refuses and says why.
    const stopped = await start('Convert 3 km to miles', 1);
    expect(await settled(stopped)).toBe('max_steps');
    await page.goto(`${api.url}/runs/${stopped}`);
    await page.evaluate(() => {
      const input = document.getElementById('resume-steps') as HTMLInputElement;
      input.required = false;
      input.value = '';
    });
    await page.click('#resume-button');
    await page.waitForFunction(() =>
      document.getElementById('resume-message')?.textContent?.includes('run_not_resumable'),
    );
    expect(await status(stopped)).toBe('max_steps');
    await page.close();
  });

  it('refuses the same POST from elsewhere without the viewer header, cookie or not', async () => {
    const stopped = await start('Convert 4 km to miles', 1);
    expect(await settled(stopped)).toBe('max_steps');
    const cookies = await context.cookies(api.url);
    const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const bare = await postJson(`${api.url}/v1/runs/${stopped}/resume`, { max_steps: 2 }, { cookie });
    expect(bare.status).toBe(401);
    // The header does not open any other POST (starting a run) to the cookie.
    const other = await postJson(
      `${api.url}/v1/runs`,
      { specialist: 'units', task: 'Convert 1 km to miles' },
      { cookie, 'x-fabric-viewer': '1' },
    );
    expect(other.status).toBe(401);
    expect(await status(stopped)).toBe('max_steps');
  });
});
