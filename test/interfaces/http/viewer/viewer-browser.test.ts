import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, chromiumMissing, launchChromium } from '../../../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyState, freshRecord } from '../../../../src/application/daemon/daemon-state.ts';
import { StateFile } from '../../../../src/infrastructure/daemon/state-file.ts';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import {
  type FakeLlmServer,
  type FakeModel,
  type ScriptedTurn,
  startFakeLlmServer,
} from '../../../support/fake-llm-server.ts';
import { type RunningApi, makeFabric, postJson, startApi } from '../http-harness.ts';

const TOKEN = 'viewer-test-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const hostile = '<img src="http://evil.example/pixel.png"><script>window.pwned = 1</script>';

const finishUnits = (answer: string): ScriptedTurn => ({
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: `Converted: ${answer}`, answer } }] },
});
const convert = (value: number): ScriptedTurn => ({
  reply: {
    content: `Converting ${value} km. ${hostile}`,
    toolCalls: [{ name: 'convert_units', arguments: { value, from: 'km', to: 'mi' } }],
  },
});

const missing = chromiumMissing;
if (missing)
  console.warn(`viewer browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

describe.skipIf(missing)('the run viewer in headless Chromium', () => {
  let sandbox: Sandbox;
  let server: FakeLlmServer;
  // The server's live catalog: the battery test takes a model out of it once the battery started.
  const catalog: FakeModel[] = [
    { id: 'qwen/qwen3-coder-30b', toolUse: true },
    { id: 'lab/ghost-1b', toolUse: true, loaded: false },
  ];
  let fabric: Fabric;
  let api: RunningApi;
  let context: BrowserContext;
  let profile: string;
  const requested: string[] = [];
  const ids: Record<'rust' | 'units' | 'failed' | 'running', string> = {
    rust: '',
    units: '',
    failed: '',
    running: '',
  };

  async function start(specialist: string, task: string, workspace?: string): Promise<string> {
    const response = await postJson(`${api.url}/v1/runs`, { specialist, task, workspace }, auth);
    expect(response.status).toBe(202);
    return ((await response.json()) as { run_id: string }).run_id;
  }

  async function settled(id: string): Promise<void> {
    for (;;) {
      const run = (await (await fetch(`${api.url}/v1/runs/${id}`, { headers: auth })).json()) as {
        status: string;
      };
      if (run.status !== 'running') return;
      await new Promise((done) => setTimeout(done, 50));
    }
  }

  async function open(path: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${api.url}${path}`);
    return page;
  }

  beforeAll(async () => {
    const crate = await mkdtemp(join(tmpdir(), 'fabric-viewer-crate-'));
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
      models: catalog,
      byTask: [
        {
          match: 'Add Region::contains',
          script: [
            {
              reply: {
                toolCalls: [
                  {
                    name: 'write_file',
                    arguments: {
                      path: 'src/contains.rs',
                      content: 'pub fn contains(x: i32) -> bool {\n    x >= 0\n}\n',
                    },
                  },
                ],
              },
            },
            {
              reply: {
                toolCalls: [
                  {
                    name: 'edit_file',
                    arguments: {
                      path: 'src/lib.rs',
                      old_text: 'pub struct Region;',
                      new_text: 'pub mod contains;\npub struct Region;',
                    },
                  },
                ],
              },
            },
            {
              reply: {
                toolCalls: [
                  { name: 'finish_task', arguments: { summary: 'Added contains() to the region crate' } },
                ],
              },
            },
          ],
        },
        { match: 'Convert 3 km', script: [convert(3), finishUnits('1.864 mi')] },
        { match: 'Convert badly', script: [{ status: 400, body: { error: 'does not support tools' } }] },
        // The running run: one step, then the script is empty and the loop retries until the test adds the end.
        { match: 'Convert slowly', script: [convert(5)] },
        // The battery's cells: the first answer comes late, so its page is open while it runs.
        { match: 'Convert 7 km', script: [{ ...convert(7), delayMs: 1500 }, finishUnits('4.35 mi')] },
        { match: 'Convert 2 km', script: [convert(2), finishUnits('1.243 mi')] },
      ],
    });
    fabric = await makeFabric(sandbox, server.url);
    api = await startApi(fabric, TOKEN);
    ids.rust = await start('rust', 'Add Region::contains with a test');
    await settled(ids.rust);
    ids.units = await start('units', 'Convert 3 km to miles');
    await settled(ids.units);
    ids.failed = await start('units', 'Convert badly');
    await settled(ids.failed);
    ids.running = await start('units', 'Convert slowly');
    profile = await mkdtemp(join(tmpdir(), 'fabric-chromium-'));
    context = await launchChromium(profile);
    context.on('request', (request) => requested.push(request.url()));
    // Signs in once: the cookie carries the token from here on (links, the event stream).
    const page = await open(`/?token=${TOKEN}`);
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

  it('lists finished and running runs, newest first, with their status', async () => {
    const page = await open('/');
    const rows = page.locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(4);
    expect(await page.locator('tbody a.run-link').allTextContents()).toEqual([
      ids.running,
      ids.failed,
      ids.units,
      ids.rust,
    ]);
    expect(await rows.nth(0).getAttribute('data-status')).toBe('running');
    expect(await rows.nth(2).locator('.status').textContent()).toBe('succeeded');
    await page.close();
  });

  it("shows a run's tool calls, its diff lines marked with + and -, and its payload", async () => {
    const page = await open(`/runs/${ids.rust}`);
    await expect.poll(() => page.locator('#run-status').textContent()).toContain('succeeded');
    const timeline = page.locator('#timeline');
    expect(await timeline.locator('[data-kind=tool_call] .kind').allTextContents()).toEqual([
      '→ write_file',
      '→ edit_file',
      '→ finish_task',
    ]);
    expect(await timeline.locator('pre.diff .add').allTextContents()).toEqual([
      '+pub fn contains(x: i32) -> bool {',
      '+    x >= 0',
      '+}',
      '+pub mod contains;',
    ]);
    expect(await timeline.locator('pre.diff .file').first().textContent()).toBe('--- /dev/null');
    expect(await page.locator('pre.payload').textContent()).toContain(
      '"summary": "Added contains() to the region crate"',
    );
    await page.close();
  });

  it('shows model text from the runlog as text, never as markup', async () => {
    const page = await open(`/runs/${ids.units}`);
    expect(await page.locator('pre.text').first().textContent()).toContain(hostile);
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('#timeline img').count()).toBe(0);
    await page.close();
  });

  it("gains a running run's later steps and its final status without a reload", async () => {
    const page = await open(`/runs/${ids.running}`);
    expect(await page.locator('#main').getAttribute('data-live')).toBe('true');
    expect(await page.locator('#run-status').textContent()).toContain('running');
    await expect.poll(() => page.locator('[data-kind=tool_result]').count()).toBe(1);
    // The model answers again only now: the retries and the end reach the open page.
    await expect
      .poll(() => page.locator('[data-kind=llm_retry]').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    server.pushFor('Convert slowly', finishUnits('3.107 mi'));
    await expect
      .poll(() => page.locator('#run-status').textContent(), { timeout: 15_000 })
      .toContain('succeeded');
    expect(await page.locator('pre.payload').textContent()).toContain('3.107 mi');
    expect(await page.locator('[data-kind=run_end]').count()).toBe(1);
    expect(await page.locator('#main').getAttribute('data-live')).toBe('false');
    await page.close();
  }, 30_000);

  it('opens a run from the list with the keyboard alone', async () => {
    const page = await open('/');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(ids.failed);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${api.url}/runs/${ids.failed}`);
    expect(await page.locator('h1').textContent()).toContain(ids.failed);
    await page.close();
  });

  it('hides the runs the status and specialist filters leave out', async () => {
    const page = await open('/');
    await page.selectOption('#filter-status', 'failed');
    await page.click('button[type=submit]');
    await page.waitForURL(/status=failed/);
    expect(await page.locator('tbody a.run-link').allTextContents()).toEqual([ids.failed]);
    await page.selectOption('#filter-status', '');
    await page.selectOption('#filter-specialist', 'rust');
    await page.click('button[type=submit]');
    await page.waitForURL(/specialist=rust/);
    expect(await page.locator('tbody a.run-link').allTextContents()).toEqual([ids.rust]);
    await page.selectOption('#filter-specialist', 'units');
    await page.click('button[type=submit]');
    await page.waitForURL(/specialist=units/);
    expect((await page.locator('tbody a.run-link').allTextContents()).sort()).toEqual(
      [ids.running, ids.failed, ids.units].sort(),
    );
    await page.close();
  });

  it("shows a battery's matrix as its cells end, through the real runner against the fake model", async () => {
    await mkdir(join(sandbox.dir, 'ws'), { recursive: true });
    await writeFile(join(sandbox.dir, 'ws', 'notes.txt'), 'distances in km\n');
    const response = await postJson(
      `${api.url}/v1/batteries`,
      {
        base_dir: sandbox.dir,
        battery: {
          name: 'units-matrix',
          specialist: 'units',
          workspace: './ws',
          models: ['qwen/qwen3-coder-30b', 'lab/ghost-1b'],
          tasks: [
            { id: 'km', task: `Convert 7 km to miles ${hostile}` },
            { id: 'strict', task: 'Convert 2 km to miles', expect: { status: 'failed' } },
          ],
        },
      },
      auth,
    );
    expect(response.status).toBe(202);
    // Gone from its server after the battery was planned (a model no server lists is refused
    // before any cell runs): its cells, which run after qwen's, fail for the infrastructure.
    catalog.splice(1, 1);
    const { id } = (await response.json()) as { id: string };
    const page = await open('/batteries');
    await page.click(`a[href="/batteries/${id}"]`);
    await page.waitForURL(`${api.url}/batteries/${id}`);
    expect(await page.locator('#battery-status').textContent()).toContain('▶ running');
    // The page is swapped in place, never reloaded: what the test leaves on window stays.
    await page.evaluate(() => {
      (window as { kept?: number }).kept = 1;
    });
    await expect
      .poll(() => page.locator('#battery-status').textContent(), { timeout: 20_000 })
      .toContain('✓ done');
    expect(await page.evaluate(() => (window as { kept?: number }).kept)).toBe(1);
    const cell = (task: string, model: string) =>
      page.locator(`tr[data-task="${task}"] td[data-model="${model}"]`);
    expect(await cell('km', 'qwen/qwen3-coder-30b').locator('.mark').textContent()).toBe('✓ pass');
    expect(await cell('strict', 'qwen/qwen3-coder-30b').locator('.mark').textContent()).toBe('✗ fail');
    expect(await cell('strict', 'qwen/qwen3-coder-30b').locator('.cell > .check').textContent()).toBe(
      'status',
    );
    // A model gone missing is the infrastructure's failure, not the model's: marked apart.
    expect(await cell('km', 'lab/ghost-1b').locator('.mark').textContent()).toBe('⚠ infrastructure');
    expect(await cell('km', 'qwen/qwen3-coder-30b').locator('.figures').textContent()).toMatch(
      /^2 steps · \d+ tokens · \d+\.\d s$/,
    );
    expect(await page.locator('table.models tbody tr').first().textContent()).toContain('50%');
    // The hostile task text is text.
    expect(await page.locator('tr[data-task="km"] .task').textContent()).toContain(hostile);
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('main img').count()).toBe(0);
    // Readable at phone width in dark mode: the matrix scrolls in its box, not the page.
    await page.setViewportSize({ width: 360, height: 740 });
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe(
      'rgb(13, 17, 23)',
    );
    // A cell links to its run, by keyboard.
    await cell('km', 'qwen/qwen3-coder-30b').locator('.mark a').focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/runs\//);
    expect(await page.locator('#run-status').textContent()).toContain('succeeded');
    await page.close();
  }, 30_000);

  it('shows the daemon page: a done task with its run and commit, a blocked one with its diagnostics', async () => {
    const repo = await realpath(await mkdtemp(join(tmpdir(), 'fabric-viewer-daemon-')));
    await mkdir(join(repo, 'openspec/changes/region'), { recursive: true });
    await writeFile(
      join(repo, 'openspec/changes/region/tasks.md'),
      `## 1. Region\n- [x] 1.1 Add contains\n- [ ] 1.2 Add center ${hostile}\n- [ ] 1.3 Add union\n`,
    );
    const state = emptyState(repo, new Date());
    state.tasks.push(
      Object.assign(freshRecord('region', '1.1', 'Add contains'), {
        status: 'done' as const,
        attempts: 1,
        run_ids: [ids.rust],
        commit: 'a1b2c3d4e5f6a7b8c9d0',
      }),
      Object.assign(freshRecord('region', '1.2', `Add center ${hostile}`), {
        status: 'blocked' as const,
        attempts: 3,
        run_ids: ['r-2', 'r-3', 'r-4'],
        diagnostics: 'error[E0599]: no method named `center` found',
      }),
    );
    await new StateFile(sandbox.runsDir, repo).save(state);
    const page = await open('/');
    await page.click('header nav a[href="/daemon"]');
    await page.waitForURL(`${api.url}/daemon`);
    const done = page.locator('tr[data-status="done"]');
    const blocked = page.locator('tr[data-status="blocked"]');
    expect(await done.locator('.status').textContent()).toBe('✓ done');
    expect(await done.locator(`a[href="/runs/${ids.rust}"]`).count()).toBe(1);
    expect(await done.textContent()).toContain('a1b2c3d4e5f6');
    expect(await blocked.locator('.status').textContent()).toBe('✗ blocked');
    expect(await blocked.locator('th').textContent()).toContain(hostile);
    expect(await page.locator('tr[data-status="pending"] .status').textContent()).toBe('… pending');
    expect(await page.locator('h3').textContent()).toContain('1 done · 1 pending · 1 blocked');
    await blocked.locator('summary').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => blocked.locator('details pre').isVisible()).toBe(true);
    expect(await blocked.locator('details pre').textContent()).toContain('no method named `center`');
    expect(await page.locator('main img').count()).toBe(0);
    await page.close();
    await rm(repo, { recursive: true, force: true });
  });

  it('shows a not-found page for an unknown run id', async () => {
    const page = await context.newPage();
    const response = await page.goto(`${api.url}/runs/20200101T000000Z-nope00`);
    expect(response?.status()).toBe(404);
    expect(await page.locator('h1').textContent()).toBe('Run not found');
    const battery = await page.goto(`${api.url}/batteries/bat-20200101T000000Z-nope00`);
    expect(battery?.status()).toBe(404);
    expect(await page.locator('h1').textContent()).toBe('Battery not found');
    await page.close();
  });

  it('makes no request outside the server', () => {
    const origin = new URL(api.url).origin;
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))).toEqual([]);
  });
});
