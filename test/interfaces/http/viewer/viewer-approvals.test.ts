import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import type { ApprovalRecord } from '../../../../src/domain/approvals.ts';
import { proposePatterns } from '../../../../src/domain/approvals.ts';
import { type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../../support/fake-llm-server.ts';
import { PATIENCE } from '../../../support/killed-run.ts';
import { type RunningApi, makeFabric, postJson, startApi } from '../http-harness.ts';

const TOKEN = 'approvals-page-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const HOSTILE = '<img src=x onerror=alert(1)>';

/**
 * SPEC §19 in the viewer, as the server renders it: a run parked over HTTP on an `ask` rule shows
 * its approval (the call, the rule, the patterns with what each matches, the scope) on its page
 * and on `/approvals`; the viewer's answer is a POST with the cookie and its header only; model
 * and user text is escaped wherever it shows.
 */
describe('approvals and steering in the viewer pages', () => {
  let sandbox: Sandbox;
  let llm: FakeLlmServer;
  let fabric: Fabric;
  let api: RunningApi;
  let cookie: string;

  const get = async (path: string) => {
    const response = await fetch(`${api.url}${path}`, { headers: { cookie } });
    expect(response.status).toBe(200);
    return response.text();
  };
  const status = async (id: string) =>
    ((await (await fetch(`${api.url}/v1/runs/${id}`, { headers: auth })).json()) as { status: string })
      .status;

  beforeAll(async () => {
    sandbox = await makeSandbox({ policy: { rules: [{ tool: 'convert_units', decision: 'ask' }] } });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 3, from: 'km', to: 'mi' } }] } },
      ],
    });
    fabric = await makeFabric(sandbox, llm.url);
    api = await startApi(fabric, TOKEN);
    const signIn = await fetch(`${api.url}/?token=${TOKEN}`, { redirect: 'manual' });
    cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(cookie).toMatch(/^fabric_viewer=/);
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
    await fabric?.close();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  it('shows a parked run and its approval, takes the viewer answer with its header only, then shows it answered', async () => {
    const started = await postJson(
      `${api.url}/v1/runs`,
      { specialist: 'units', task: 'Convert 3 km to miles' },
      auth,
    );
    expect(started.status).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    await vi.waitFor(async () => expect(await status(runId)).toBe('awaiting_approval'), PATIENCE);
    const [approval] = await fabric.approvals.list({ runId, state: 'pending' });
    if (approval === undefined) throw new Error('no approval');

    const pageText = await get(`/runs/${runId}`);
    expect(pageText).toContain('<span class="status status-awaiting_approval">awaiting_approval</span>');
    expect(pageText).toContain('id="awaiting-approval"');
    expect(pageText).toContain(`data-approval-id="${approval.id}"`);
    expect(pageText).toContain(approval.rule);
    expect(pageText).toContain(`name="pattern-${approval.id}" value="0" checked`);
    expect(pageText).toContain('<option value="specialist">');
    expect(pageText).toContain(
      '<button type="submit" name="decision" value="approve" class="approve">Approve</button>',
    );
    // Parked with a question open: no Resume yet, and no steering of an ended run.
    expect(pageText).not.toContain('id="resume-form"');
    expect(pageText).not.toContain('id="steer-form"');
    expect(await get('/?status=awaiting_approval')).toContain(`data-run-id="${runId}"`);
    const list = await get('/approvals');
    expect(list).toContain('<a href="/approvals" aria-current="page">Approvals</a>');
    expect(list).toContain(`<a class="mono" href="/runs/${runId}">${runId}</a>`);

    // The cookie alone steers nothing either: the viewer's header is needed.
    for (const [path, body] of [
      ['messages', { text: 'go on' }],
      ['pause', {}],
    ] as const)
      expect((await postJson(`${api.url}/v1/runs/${runId}/${path}`, body, { cookie })).status).toBe(401);
    const answer = { decision: 'approve', scope: 'once', pattern: 0, message: HOSTILE };
    const bare = await postJson(`${api.url}/v1/approvals/${approval.id}`, answer, { cookie });
    expect(bare.status).toBe(401);
    const wrong = await postJson(`${api.url}/v1/approvals/${approval.id}`, answer, {
      cookie: 'fabric_viewer=0000',
      'x-fabric-viewer': '1',
    });
    expect(wrong.status).toBe(401);
    const given = await postJson(`${api.url}/v1/approvals/${approval.id}`, answer, {
      cookie,
      'x-fabric-viewer': '1',
    });
    expect(given.status).toBe(200);
    expect(((await given.json()) as ApprovalRecord).answer).toMatchObject({ channel: 'viewer' });

    const after = await get(`/runs/${runId}`);
    expect(after).not.toContain(`<article class="approval" id="approval-${approval.id}"`);
    expect(after).toContain('<li class="answered-approved"');
    expect(after).toContain('via viewer');
    expect(after).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(after).not.toContain(HOSTILE);
    // Every question answered: the run may go on, and the page offers it.
    expect(after).toContain('id="resume-form"');
    expect(await get('/approvals')).toContain('No approval waits for an answer.');
  });

  it('escapes a hostile argv, rule and pattern on /approvals', async () => {
    const subject = { tool: 'shell', argv: ['cargo', 'tree', HOSTILE], arguments: '{}' };
    await fabric.approvals.create({
      id: 'apr_Hostile1',
      run_id: 'run_hostile',
      specialist: 'units',
      step: 1,
      call_id: 'call_1',
      tool: 'shell',
      argv: subject.argv,
      arguments: JSON.stringify({ command: `cargo tree ${HOSTILE}` }),
      rule: `policy.rules[0] (shell "${HOSTILE}": ask)`,
      requested_at: new Date().toISOString(),
      proposals: proposePatterns(subject),
      state: 'pending',
    });
    const list = await get('/approvals');
    expect(list).not.toContain(HOSTILE);
    expect(list).toContain(
      '<code class="argv">cargo tree &#39;&lt;img src=x onerror=alert(1)&gt;&#39;</code>',
    );
    expect(list).toContain('policy.rules[0] (shell &quot;&lt;img src=x onerror=alert(1)&gt;&quot;: ask)');
    expect(list).toContain('name="pattern-apr_Hostile1" value="1"');
    expect(list).toContain('Matches `cargo tree` with any arguments');
  });

  it('shows control and bidi characters of an argv on /approvals as escapes', async () => {
    const argv = ['cargo', 'tree', '-i', 'x\u001b[2K\r\u202eok'];
    const subject = { tool: 'shell', argv, arguments: '{}' };
    await fabric.approvals.create({
      id: 'apr_Control1',
      run_id: 'run_control',
      specialist: 'units',
      step: 1,
      call_id: 'call_1',
      tool: 'shell',
      argv,
      arguments: JSON.stringify({ command: argv.join(' ') }),
      rule: 'policy.rules[0] (shell "cargo tree": ask)',
      requested_at: new Date().toISOString(),
      proposals: proposePatterns(subject),
      state: 'pending',
    });
    const list = await get('/approvals');
    expect(list).toContain('<code class="argv">cargo tree -i $&#39;x\\e[2K\\r\\u202eok&#39;</code>');
    expect(list).not.toMatch(/[\u001b\u202e]/);
  });
});
