import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import {
  type Sandbox,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, PATIENCE } from '../../support/killed-run.ts';
import { exampleCrate } from '../../support/rust-run.ts';
import { listeningOn } from '../../support/served.ts';

/**
 * SPEC §19 over HTTP: a run parks on a call an ask rule names, holds no model request while it
 * waits, and goes on once answered — by HTTP on a `fabric serve` started after the first was
 * SIGKILLed, by `fabric approvals answer` while no server ran, or by its expiry.
 */
const MODEL = 'qwen/qwen3-coder-30b';
const FINISH = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked at the tree.' } }] },
};
const TREE = { reply: { toolCalls: [{ name: 'shell', arguments: { command: 'cargo tree -e features' } }] } };

function config(extra: Record<string, unknown> = {}) {
  return {
    policy: { rules: [{ tool: 'shell', command: 'cargo tree', decision: 'ask' }], ...extra },
    specialists: {
      rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
    },
  };
}

function lastMessage(body: unknown): string {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  return String(messages.at(-1)?.content);
}

describe('a run parked on an approval, over HTTP', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const serves: ReturnType<typeof spawnFabric>[] = [];
  afterEach(async () => {
    for (const serve of serves.splice(0)) {
      serve.kill('SIGKILL');
      await serve;
    }
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function serve(env: Record<string, string>) {
    if (!sandbox) throw new Error('no sandbox');
    const child = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    serves.push(child);
    return { child, url: (await listeningOn(child)).url };
  }

  async function parkedRun(url: string, workspace: string): Promise<{ runId: string; approval: string }> {
    const started = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ specialist: 'rust', task: 'Show the dependency tree', workspace }),
    });
    expect(started.status, await started.clone().text()).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    await vi.waitFor(async () => {
      const view = (await (await fetch(`${url}/v1/runs/${runId}`)).json()) as { status: string };
      expect(view.status).toBe('awaiting_approval');
    }, PATIENCE);
    const pending = (await (await fetch(`${url}/v1/approvals?state=pending`)).json()) as {
      approvals: { id: string; run_id: string; argv: string[] }[];
    };
    expect(pending.approvals).toHaveLength(1);
    expect(pending.approvals[0]).toMatchObject({ run_id: runId, argv: ['cargo', 'tree', '-e', 'features'] });
    return { runId, approval: pending.approvals[0]!.id };
  }

  const answer = (url: string, id: string, body: Record<string, unknown>) =>
    fetch(`${url}/v1/approvals/${id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  async function finished(url: string, runId: string): Promise<void> {
    await vi.waitFor(async () => {
      const view = (await (await fetch(`${url}/v1/runs/${runId}`)).json()) as { status: string };
      expect(view.status).toBe('succeeded');
    }, PATIENCE);
  }

  it('survives its server being killed: approved over HTTP on a new server, it finishes with the real output', async () => {
    sandbox = await makeSandbox(config());
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [TREE, FINISH],
    });
    const env = testEnv(sandbox, llm.url);
    const first = await serve(env);
    const { runId, approval } = await parkedRun(first.url, workspace);
    // Parked: the one request was made and nothing more is asked while it waits.
    expect(llm.chatRequests()).toHaveLength(1);
    first.child.kill('SIGKILL');
    expect((await first.child).signal).toBe('SIGKILL');

    const second = await serve(env);
    expect(llm.chatRequests()).toHaveLength(1);
    const pendingGauge = async () =>
      /^fabric_approvals_pending (\d+)$/m.exec(await (await fetch(`${second.url}/metrics`)).text())?.[1];
    expect(await pendingGauge()).toBe('1');
    const ok = await answer(second.url, approval, { decision: 'approve', message: 'just the tree' });
    expect(ok.status, await ok.clone().text()).toBe(200);
    expect(await ok.json()).toMatchObject({ id: approval, state: 'approved', answer: { channel: 'http' } });
    const again = await answer(second.url, approval, { decision: 'deny' });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('approval_answered');
    await finished(second.url, runId);
    expect(await pendingGauge()).toBe('0');
    const read = lastMessage(llm.chatRequests()[1]!.body);
    expect(read).toContain('compositor-core v0.1.0');
    expect(read).toContain('just the tree');
    const events: RunEvent[] = await new KilledRuns(sandbox, env).events(runId);
    expect(
      events.filter((event) => event.kind === 'run_end').map((event) => (event as { status: string }).status),
    ).toEqual(['awaiting_approval', 'succeeded']);
    expect(events.find((event) => event.kind === 'approval_decided')).toMatchObject({
      state: 'approved',
      channel: 'http',
    });
  }, 240_000);

  it('goes on when answered with fabric approvals answer while no server ran, once a server starts', async () => {
    sandbox = await makeSandbox(config());
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [TREE, FINISH],
    });
    const env = testEnv(sandbox, llm.url);
    const first = await serve(env);
    const { runId, approval } = await parkedRun(first.url, workspace);
    first.child.kill('SIGKILL');
    await first.child;
    const denied = await runFabricInProcess(
      [
        'approvals',
        'answer',
        approval,
        'deny',
        '--message',
        'the bug is in damage.rs',
        '--config',
        sandbox.configPath,
      ],
      { env, cwd: sandbox.dir },
    );
    expect(denied.exitCode, denied.stderr).toBe(0);
    expect(denied.stdout).toContain('a fabric serve on this runs directory resumes it');
    // A file of the store that another tool damaged: named, and it holds up neither the list nor
    // the resume (it used to fail every listing, so no parked run was resumed).
    const damaged = join(sandbox.runsDir, '.approvals', 'apr_bbbbbbbbbbbb.json');
    await writeFile(damaged, JSON.stringify({ id: 'apr_bbbbbbbbbbbb', run_id: 'r', state: 'pending' }));
    const listed = await runFabricInProcess(
      ['approvals', 'list', '--state', 'all', '--config', sandbox.configPath],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(listed.stderr).toContain(`warning: ${damaged} is not whole (specialist: `);
    expect(listed.stdout).toContain(approval);
    const second = await serve(env);
    await finished(second.url, runId);
    const all = (await (await fetch(`${second.url}/v1/approvals?state=all`)).json()) as {
      approvals: { id: string }[];
      unreadable: { file: string }[];
    };
    expect(all.approvals.map((record) => record.id)).toEqual([approval]);
    expect(all.unreadable.map((bad) => bad.file)).toEqual([damaged]);
    const read = lastMessage(llm.chatRequests()[1]!.body);
    expect(read).toContain('Not run: a person denied `cargo tree -e features`');
    expect(read).toContain('the bug is in damage.rs');
    const events = await new KilledRuns(sandbox, env).events(runId);
    expect(events.some((event) => event.kind === 'tool_started' || event.kind === 'tool_result')).toBe(false);
  }, 240_000);

  it('cancelling a parked run ends it cancelled, its approval too, and nothing resumes it', async () => {
    sandbox = await makeSandbox(config());
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [TREE, FINISH],
    });
    const env = testEnv(sandbox, llm.url);
    const { url } = await serve(env);
    const { runId, approval } = await parkedRun(url, workspace);
    const cancelled = await fetch(`${url}/v1/runs/${runId}/cancel`, { method: 'POST' });
    expect(cancelled.status, await cancelled.clone().text()).toBe(200);
    expect(await cancelled.json()).toMatchObject({ run_id: runId, status: 'cancelled' });
    const record = (await (await fetch(`${url}/v1/approvals/${approval}`)).json()) as Record<string, unknown>;
    expect(record).toMatchObject({ state: 'cancelled', answer: { channel: 'http' } });
    const late = await fetch(`${url}/v1/approvals/${approval}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(late.status).toBe(409);
    // Past the server's poll for answers: still ended, never resumed, the model never asked again.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const events = await new KilledRuns(sandbox, env).events(runId);
    expect(events.map((event) => event.kind).slice(-2)).toEqual(['approval_decided', 'run_end']);
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'cancelled' });
    expect(events.some((event) => event.kind === 'run_resumed')).toBe(false);
    expect(llm.chatRequests()).toHaveLength(1);
  }, 240_000);

  it('an approval that expires resumes the run by itself, and the model is told it was not a refusal', async () => {
    sandbox = await makeSandbox(config({ approval_timeout_s: 1 }));
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [TREE, FINISH],
    });
    const env = testEnv(sandbox, llm.url);
    const { url } = await serve(env);
    const started = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ specialist: 'rust', task: 'Show the dependency tree', workspace }),
    });
    const { run_id: runId } = (await started.json()) as { run_id: string };
    await finished(url, runId);
    expect(lastMessage(llm.chatRequests()[1]!.body)).toContain('nobody answered before it expired');
    const events = await new KilledRuns(sandbox, env).events(runId);
    expect(events.find((event) => event.kind === 'approval_decided')).toMatchObject({
      state: 'expired',
      channel: 'timeout',
    });
    const all = (await (await fetch(`${url}/v1/approvals?state=expired`)).json()) as { approvals: unknown[] };
    expect(all.approvals).toHaveLength(1);
  }, 240_000);
});
