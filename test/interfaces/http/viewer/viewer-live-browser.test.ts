import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
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

const TOKEN = 'live-viewer-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const hostileLine = '<script>window.pwned = 1</script>';
const CONTENT = `pub fn contains(x: i32) -> bool {\n    // ${hostileLine}\n    x >= 0\n}\n`;

const convert = (value: number): ScriptedTurn => ({
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value, from: 'km', to: 'mi' } }] },
});
const finish = (answer: string): ScriptedTurn => ({
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: `Converted: ${answer}`, answer } }] },
});

const missing = chromiumMissing;
if (missing)
  console.warn(`live viewer browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

// Issue 20: the runs list follows runs that start after it opened, a run's header counts its
// tokens as it goes, and tool arguments that span lines read as text blocks.
describe.skipIf(missing)('the live run viewer in headless Chromium', () => {
  let sandbox: Sandbox;
  let server: FakeLlmServer;
  let fabric: Fabric;
  let api: RunningApi;
  let context: BrowserContext;
  let profile: string;
  let first = '';

  async function start(specialist: string, task: string): Promise<string> {
    const response = await postJson(`${api.url}/v1/runs`, { specialist, task }, auth);
    expect(response.status).toBe(202);
    return ((await response.json()) as { run_id: string }).run_id;
  }

  async function run(id: string): Promise<{ status: string; steps: number; total_tokens: number }> {
    return (await (await fetch(`${api.url}/v1/runs/${id}`, { headers: auth })).json()) as {
      status: string;
      steps: number;
      total_tokens: number;
    };
  }

  async function settled(id: string): Promise<void> {
    while ((await run(id)).status === 'running') await new Promise((done) => setTimeout(done, 50));
  }

  async function open(path: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${api.url}${path}`);
    // The page is never reloaded: what a test leaves on window stays.
    await page.evaluate(() => {
      (window as { kept?: number }).kept = 1;
    });
    return page;
  }

  const kept = (page: Page) => page.evaluate(() => (window as { kept?: number }).kept);

  beforeAll(async () => {
    const crate = await mkdtemp(join(tmpdir(), 'fabric-live-crate-'));
    await mkdir(join(crate, 'src'));
    await writeFile(
      join(crate, 'Cargo.toml'),
      '[package]\nname = "region"\nversion = "0.1.0"\nedition = "2021"\n',
    );
    await writeFile(join(crate, 'src', 'lib.rs'), 'pub struct Region;\n');
    sandbox = await makeSandbox({
      llm: { retry: { max_attempts: 1000, base_delay_ms: 100, max_delay_ms: 150 }, probe_timeout_ms: 1000 },
      specialists: {
        units: { builder: `${EXAMPLE_PACK}#buildPack`, description: 'unit conversions' },
        rust: { builder: 'builtin:rust', workspace: crate },
      },
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      byTask: [
        { match: 'Convert 1 km', script: [convert(1), finish('0.621 mi')] },
        // Two steps, then the script is empty and the loop retries until a test adds the end.
        { match: 'Convert later', script: [convert(4), convert(6)] },
        { match: 'Convert while watched', script: [convert(8), convert(9)] },
        {
          match: 'Write contains',
          script: [
            {
              reply: {
                toolCalls: [
                  {
                    name: 'write_file',
                    arguments: { path: 'src/contains.rs', content: CONTENT },
                  },
                ],
              },
            },
            { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Wrote contains' } }] } },
          ],
        },
      ],
    });
    fabric = await makeFabric(sandbox, server.url);
    api = await startApi(fabric, TOKEN);
    first = await start('units', 'Convert 1 km to miles');
    await settled(first);
    profile = await mkdtemp(join(tmpdir(), 'fabric-chromium-live-'));
    context = await launchChromium(profile);
    // Signs in with the token once: from here on the cookie alone carries it, the list's stream too.
    const page = await context.newPage();
    await page.goto(`${api.url}/?token=${TOKEN}`);
    expect(page.url()).toBe(`${api.url}/`);
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

  it('adds a run started after the list opened and follows it to succeeded, keeping the keyboard selection', async () => {
    const list = await open('/');
    const succeededOnly = await open('/?status=succeeded');
    const failedOnly = await open('/?status=failed');
    expect(await failedOnly.locator('#runs-none').isVisible()).toBe(true);
    // The selection is on the run that was there.
    await list.keyboard.press('j');
    expect(await list.evaluate(() => document.activeElement?.textContent)).toBe(first);

    const id = await start('units', 'Convert later 4 km');
    const row = list.locator(`tr[data-run-id="${id}"]`);
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    expect(await list.locator('tbody a.run-link').allTextContents()).toEqual([id, first]);
    // It goes on: running, at its third step (the model has not answered it), with the tokens so far.
    await expect.poll(() => row.locator('td').nth(4).textContent(), { timeout: 10_000 }).toBe('3');
    expect(await row.getAttribute('data-status')).toBe('running');
    expect(Number(await row.locator('td').nth(6).textContent())).toBeGreaterThan(0);
    expect(await row.locator('td').nth(5).textContent()).toMatch(/ so far$/);
    // The status filter leaves it out while it runs.
    expect(await succeededOnly.locator(`tr[data-run-id="${id}"]`).count()).toBe(0);

    server.pushFor('Convert later', finish('2.485 mi'));
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 15_000 }).toBe('succeeded');
    const final = await run(id);
    expect(await row.locator('.status').textContent()).toBe('succeeded');
    expect(await row.locator('td').nth(4).textContent()).toBe(String(final.steps));
    expect(await row.locator('td').nth(6).textContent()).toBe(String(final.total_tokens));
    expect(await row.locator('td').nth(5).textContent()).not.toMatch(/so far/);

    // The selection stayed on the same run, and j/k/Enter go on from it.
    expect(await list.evaluate(() => document.activeElement?.textContent)).toBe(first);
    await list.keyboard.press('k');
    expect(await list.evaluate(() => document.activeElement?.textContent)).toBe(id);
    expect(await kept(list)).toBe(1);
    await list.keyboard.press('Enter');
    await list.waitForURL(`${api.url}/runs/${id}`);

    // The succeeded filter gains it once it has succeeded; the failed filter never does.
    await expect
      .poll(() => succeededOnly.locator('tbody a.run-link').allTextContents(), { timeout: 10_000 })
      .toEqual([id, first]);
    expect(await kept(succeededOnly)).toBe(1);
    expect(await failedOnly.locator('tbody tr').count()).toBe(0);
    expect(await failedOnly.locator('#runs-none').isVisible()).toBe(true);
    for (const page of [list, succeededOnly, failedOnly]) await page.close();
  }, 45_000);

  it("counts a running run's steps, tokens and time in its header as events arrive, then shows the totals", async () => {
    const id = await start('units', 'Convert while watched 8 km');
    const page = await open(`/runs/${id}`);
    const tokens = page.locator('#run-tokens');
    const steps = page.locator('#run-steps');
    // Two responses, then the model is silent at step 3: the header has their tokens before any run_end.
    await expect.poll(() => page.locator('[data-kind=llm_response]').count(), { timeout: 10_000 }).toBe(2);
    await expect.poll(() => steps.textContent()).toBe('3');
    const responseTokens = (await page.locator('[data-kind=llm_response] .meta').allTextContents()).map(
      (text) => Number(/^(\d+) tokens/.exec(text)?.[1]),
    );
    expect(responseTokens.every((n) => n > 0)).toBe(true);
    const sum = responseTokens.reduce((a, b) => a + b, 0);
    await expect.poll(() => tokens.textContent()).toBe(`${sum} so far`);
    expect(await page.locator('#run-status').textContent()).toContain('running');
    // The elapsed time counts on between events.
    const before = await page.locator('#run-duration').textContent();
    expect(before).toMatch(/ so far$/);
    await expect.poll(() => page.locator('#run-duration').textContent(), { timeout: 5000 }).not.toBe(before);

    server.pushFor('Convert while watched', finish('4.971 mi'));
    await expect
      .poll(() => page.locator('#run-status').textContent(), { timeout: 15_000 })
      .toContain('succeeded');
    const final = await run(id);
    expect(final.total_tokens).toBeGreaterThan(sum);
    expect(await tokens.textContent()).toBe(String(final.total_tokens));
    expect(await steps.textContent()).toBe(String(final.steps));
    expect(await page.locator('#run-duration').textContent()).toMatch(/^\d+(\.\d)? (ms|s)$/);
    expect(await kept(page)).toBe(1);
    await page.close();
  }, 45_000);

  it("shows write_file's multi-line content as a text block with its line breaks, escaped, and the JSON as sent", async () => {
    const id = await start('rust', 'Write contains in the region crate');
    await settled(id);
    const page = await open(`/runs/${id}`);
    const call = page.locator('[data-kind=tool_call]').filter({ hasText: 'write_file' });
    const content = call.locator('pre.arg-text[data-arg=content]');
    expect(await content.textContent()).toBe(CONTENT);
    // Real line breaks: the block is rendered as tall as its four lines, not as one escaped string.
    const lines = await content.evaluate((pre) => {
      const style = getComputedStyle(pre);
      const inner =
        pre.clientHeight - Number.parseFloat(style.paddingTop) - Number.parseFloat(style.paddingBottom);
      return Math.round(inner / Number.parseFloat(style.lineHeight));
    });
    expect(lines).toBe(4);
    expect(await content.textContent()).not.toContain('\\n');
    expect(await call.locator('.arg-name').first().textContent()).toBe('content');
    expect(await call.locator('dd[data-arg=path]').textContent()).toBe('src/contains.rs');
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('#timeline script').count()).toBe(0);
    // The arguments as the model sent them are one click away.
    const raw = call.locator('details.args-raw');
    expect(await raw.locator('pre').isVisible()).toBe(false);
    await raw.locator('summary').click();
    expect(JSON.parse((await raw.locator('pre').textContent()) ?? '')).toEqual({
      path: 'src/contains.rs',
      content: CONTENT,
    });
    await page.close();
  });
});
