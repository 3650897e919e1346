import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import type { ApprovalRecord } from '../../../../src/domain/approvals.ts';
import { parseRunlog } from '../../../../src/infrastructure/runlog/parse-runlog.ts';
import { CHROMIUM, chromiumMissing, launchChromium } from '../../../support/chromium.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../../support/fake-llm-server.ts';
import { PATIENCE } from '../../../support/killed-run.ts';
import { exampleCrate } from '../../../support/rust-run.ts';
import { type RunningApi, makeFabric, postJson, startApi } from '../http-harness.ts';

const TOKEN = 'approvals-viewer-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const STEER = 'Give the answer in miles, to six decimals.';

const missing = chromiumMissing;
if (missing)
  console.warn(`viewer approval tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

// Issue 32 (SPEC §19): the run page answers a parked run's approval with the cookie the viewer
// signed in with (a second answer shows the 409), and a running run's page steers and pauses it.
describe.skipIf(missing)("the run viewer's approvals and steering in headless Chromium", () => {
  let sandbox: Sandbox;
  let llm: FakeLlmServer;
  let fabric: Fabric;
  let api: RunningApi;
  let context: BrowserContext;
  let profile: string;
  let workspace: string;

  const status = async (id: string) =>
    ((await (await fetch(`${api.url}/v1/runs/${id}`, { headers: auth })).json()) as { status: string })
      .status;

  async function start(body: Record<string, unknown>): Promise<string> {
    const response = await postJson(`${api.url}/v1/runs`, body, auth);
    expect(response.status).toBe(202);
    return ((await response.json()) as { run_id: string }).run_id;
  }

  beforeAll(async () => {
    sandbox = await makeSandbox({
      policy: { rules: [{ tool: 'shell', command: 'cargo tree', decision: 'ask' }] },
      specialists: {
        units: { builder: `${EXAMPLE_PACK}#buildPack`, description: 'unit conversions' },
        rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
      },
    });
    workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      byTask: [
        {
          match: 'Show the dependency tree',
          script: [
            { reply: { toolCalls: [{ name: 'shell', arguments: { command: 'cargo tree -e features' } }] } },
            {
              reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked at the tree.' } }] },
            },
          ],
        },
        {
          match: 'Convert 3 km',
          script: [
            // Slow enough for the page to ask for the pause while the first step is in progress.
            {
              reply: {
                toolCalls: [{ name: 'convert_units', arguments: { value: 3, from: 'km', to: 'mi' } }],
              },
              delayMs: 5_000,
            },
            {
              reply: {
                toolCalls: [
                  { name: 'finish_task', arguments: { summary: 'Converted', answer: '1.864114 mi' } },
                ],
              },
            },
          ],
        },
      ],
    });
    fabric = await makeFabric(sandbox, llm.url);
    api = await startApi(fabric, TOKEN);
    profile = await mkdtemp(join(tmpdir(), 'fabric-chromium-approvals-'));
    context = await launchChromium(profile);
    const page = await context.newPage();
    await page.goto(`${api.url}/?token=${TOKEN}`);
    await page.close();
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await api?.stop();
    await fabric?.close();
    await llm?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('approves a parked cargo tree from the run page, and a second answer shows the 409', async () => {
    const id = await start({ specialist: 'rust', task: 'Show the dependency tree', workspace });
    await vi.waitFor(async () => expect(await status(id)).toBe('awaiting_approval'), PATIENCE);
    const [approval] = await fabric.approvals.list({ runId: id, state: 'pending' });
    if (approval === undefined) throw new Error('no pending approval');
    const card = `#approval-${approval.id}`;

    const page = await context.newPage();
    await page.goto(`${api.url}/runs/${id}`);
    // Another page of the run that only watches: the answer reaches it on the approvals stream.
    const watcher = await context.newPage();
    await watcher.goto(`${api.url}/runs/${id}`);
    // The watcher fetches its page again only once the resumed run has ended (as when the
    // model is quick): it must still show the steps after the answer, not only the status.
    await watcher.route(`${api.url}/runs/${id}`, async (route) => {
      await vi.waitFor(async () => expect(await status(id)).toBe('succeeded'), PATIENCE);
      await route.continue();
    });
    // A second tab, opened before the answer: its buttons are still there.
    const stale = await context.newPage();
    await stale.goto(`${api.url}/approvals`);
    expect(await page.locator('#run-status').textContent()).toContain('awaiting_approval');
    expect(await page.locator(`${card} code.argv`).textContent()).toBe('cargo tree -e features');
    expect(await page.locator(`${card} input[type=radio]`).count()).toBe(2);
    expect(await page.locator(`${card} .pattern`).nth(1).textContent()).toContain(
      'Does not match any other `cargo` subcommand',
    );

    await page.check(`${card} input[type=radio][value="1"]`);
    await page.selectOption(`${card} select[name=scope]`, 'run');
    await page.fill(`${card} textarea[name=message]`, 'only the tree, please');
    await page.click(`${card} button.approve`);
    await page.waitForFunction(
      () => document.getElementById('approval-result')?.textContent?.includes('approved'),
      null,
      { timeout: 30_000 },
    );
    const record = (await (
      await fetch(`${api.url}/v1/approvals/${approval.id}`, { headers: auth })
    ).json()) as ApprovalRecord;
    expect(record.state).toBe('approved');
    expect(record.answer).toMatchObject({
      channel: 'viewer',
      scope: 'run',
      pattern: 1,
      message: 'only the tree, please',
    });
    // The page says it without a reload: the card gone, the answer listed.
    await page.waitForSelector(`li.answered-approved[data-approval-id="${approval.id}"]`);
    expect(await page.locator(card).count()).toBe(0);
    expect(await page.locator('#approval-result').textContent()).toContain('through viewer');

    await stale.click(`${card} button.deny`);
    await stale.waitForFunction(
      () => document.getElementById('approval-result')?.textContent?.includes('Already answered'),
      null,
      { timeout: 30_000 },
    );
    expect(await stale.locator('#approval-result').textContent()).toContain(
      'already has its answer (approved through viewer',
    );
    // Then the list again, without a reload: nothing waits any more.
    await stale.waitForSelector('#approvals-none');
    expect(await stale.locator(card).count()).toBe(0);
    const again = (await (
      await fetch(`${api.url}/v1/approvals/${approval.id}`, { headers: auth })
    ).json()) as ApprovalRecord;
    expect(again.state).toBe('approved');
    // The server resumed the parked run on the viewer's answer: cargo ran, the model read it.
    await vi.waitFor(async () => expect(await status(id)).toBe('succeeded'), PATIENCE);
    const read = llm
      .chatRequests()
      .map((request) => JSON.stringify(request.body))
      .find((body) => body.includes('only the tree, please'));
    expect(read).toContain('compositor-core v0.1.0');
    // Both run pages follow the resumed run to its end without a reload: its last turn in the
    // timeline, its status succeeded.
    for (const shown of [page, watcher]) {
      await shown.waitForFunction(
        () => document.getElementById('run-status')?.textContent?.includes('succeeded'),
        null,
        { timeout: 30_000 },
      );
      expect(await shown.locator('#timeline').textContent()).toContain('Looked at the tree');
    }
    await page.close();
    await watcher.close();
    await stale.close();
  }, 180_000);

  it('pauses a running run, steers it from the box, and lets it go on: the timeline shows each', async () => {
    const id = await start({ specialist: 'units', task: 'Convert 3 km to miles' });
    await vi.waitFor(() => expect(llm.chatRequests().length).toBeGreaterThanOrEqual(1), PATIENCE);
    const page = await context.newPage();
    await page.goto(`${api.url}/runs/${id}`);
    await page.click('#pause-button');
    await page.waitForFunction(
      () => document.getElementById('timeline')?.textContent?.includes('Paused'),
      null,
      { timeout: 60_000 },
    );
    await page.fill('#steer-text', STEER);
    await page.click('#steer-button');
    await page.waitForFunction(() =>
      document.getElementById('steer-message')?.textContent?.includes('Steer message sent'),
    );
    await page.click('#continue-button');
    await page.waitForFunction(
      (text) => {
        const timeline = document.getElementById('timeline')?.textContent ?? '';
        return timeline.includes('Steered') && timeline.includes(text);
      },
      STEER,
      { timeout: 60_000 },
    );
    await page.waitForFunction(
      () => document.getElementById('run-status')?.textContent?.includes('succeeded'),
      null,
      { timeout: 60_000 },
    );
    // The run ended: its controls are gone.
    expect(await page.locator('#steer-form').count()).toBe(0);
    const path = join(sandbox.runsDir, id, 'runlog.jsonl');
    const events = parseRunlog(await readFile(path, 'utf8'), path).events;
    expect(events.find((event) => event.kind === 'steer_message')).toMatchObject({
      text: STEER,
      mode: 'steer',
      channel: 'viewer',
    });
    expect(events.find((event) => event.kind === 'run_paused')).toMatchObject({ channel: 'viewer' });
    expect(events.find((event) => event.kind === 'run_unpaused')).toMatchObject({ channel: 'viewer' });
    await page.close();
  });
});
