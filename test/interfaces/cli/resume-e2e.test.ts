import { mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { daemonRepo } from '../../support/daemon-repo.ts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, PATIENCE, sentRequest } from '../../support/killed-run.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { RunHub } from '../../../src/interfaces/http/run-hub.ts';
import { makeFabric } from '../http/http-harness.ts';

const MODEL = 'qwen/qwen3-coder-30b';

describe('fabric resume after the run was killed', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let runs: KilledRuns | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await runs?.stop();
    runs = undefined;
    await llm?.stop();
    await sandbox?.cleanup();
  });

  /** Starts `fabric run` as a real process, waits until the fake has `requests` chat requests, and kills it. */
  async function killedRun(args: readonly string[], env: Record<string, string>, requests: number) {
    if (!sandbox) throw new Error('no sandbox');
    runs = new KilledRuns(sandbox, env);
    return runs.killWhen(args, () => llm?.chatRequests().length === requests);
  }

  function resume(args: readonly string[], env: Record<string, string>) {
    if (!sandbox) throw new Error('no sandbox');
    runs ??= new KilledRuns(sandbox, env);
    return runs.resume(args);
  }

  async function events(runId: string): Promise<RunEvent[]> {
    return runs?.events(runId) ?? [];
  }

  /** What a chat request sent, as the server received it: the messages and the tools. */
  function sent(index: number): string {
    return sentRequest(llm, index);
  }

  it('asks again the turn that was streaming when the process died, with the same request, and asks no recorded turn again', async () => {
    sandbox = await makeSandbox();
    const [convert, rejected, accepted] = CONVERSION_SCRIPT;
    if (!convert || !rejected || !accepted) throw new Error('script');
    // The second request hangs: the process is killed while it waits for the reply.
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [convert, { hang: true }, rejected, accepted],
    });
    const env = testEnv(sandbox, llm.url);
    const runId = await killedRun(['-s', 'units', 'Convert 3 km to miles'], env, 2);

    const out = await resume([runId.slice(0, 20), '--json'], env);
    expect(out.exitCode, out.stderr).toBe(0);
    const result = JSON.parse(out.stdout) as RunResult;
    expect(result).toMatchObject({ run_id: runId, status: 'succeeded', payload: { answer: '1.864114 mi' } });
    // The progress says the run goes on, and counts its steps against its limit (not /0).
    expect(out.stderr).toContain(`fabric run ${runId} goes on (it was interrupted) · model ${MODEL}`);
    const start = (await events(runId)).find((event) => event.kind === 'run_start');
    const limit = start?.kind === 'run_start' ? start.max_steps : 0;
    expect(out.stderr).toContain(`[3/${limit}]`);
    expect(out.stderr).not.toMatch(/\[\d+\/0\]/);

    // The request after the resume is the one the killed process sent, byte for byte.
    expect(llm.chatRequests()).toHaveLength(4);
    expect(sent(2)).toBe(sent(1));
    const log = await events(runId);
    const kinds = log.map((event) => event.kind);
    expect(kinds.filter((kind) => kind === 'run_start')).toHaveLength(1);
    expect(kinds.filter((kind) => kind === 'run_end')).toHaveLength(1);
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      previous_status: 'interrupted',
      turn_asked_again: true,
      in_flight: [],
      drift: [],
      forced: false,
    });
    // Every recorded turn was asked once: three answers, four requests (the killed one's asked again).
    expect(kinds.filter((kind) => kind === 'llm_response')).toHaveLength(3);
    expect(kinds.filter((kind) => kind === 'tool_result')).toHaveLength(1);
    // seq goes on from the killed process's last line.
    expect(log.map((event) => event.seq)).toEqual(log.map((_, i) => i + 1));
  });

  it('refuses a run that succeeded, and a run whose process is still running it', async () => {
    sandbox = await makeSandbox();
    const [convert, rejected, accepted] = CONVERSION_SCRIPT;
    if (!convert || !rejected || !accepted) throw new Error('script');
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [convert, rejected, accepted, { hang: true }],
    });
    const env = testEnv(sandbox, llm.url);
    const done = await runFabricInProcess(
      ['run', '--config', sandbox.configPath, '-s', 'units', '--json', 'Convert 3 km to miles'],
      { env, cwd: sandbox.dir },
    );
    const succeeded = (JSON.parse(done.stdout) as RunResult).run_id;
    const refused = await resume([succeeded], env);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('it succeeded: there is nothing to resume');

    runs ??= new KilledRuns(sandbox, env);
    runs.spawn(['-s', 'units', 'Convert 5 km']);
    const fake = llm;
    await vi.waitFor(() => expect(fake.chatRequests()).toHaveLength(4), PATIENCE);
    const live = (await readdir(sandbox.runsDir)).find((name) => !name.startsWith('.') && name !== succeeded);
    if (live === undefined) throw new Error('no live run');
    const alive = await resume([live], env);
    expect(alive.exitCode).toBe(2);
    expect(alive.stderr).toContain('is still running it');
    // Refused before anything was written: the live run's log has no run_resumed.
    expect((await events(live)).map((event) => event.kind)).not.toContain('run_resumed');
  });

  it("finds a daemon's run in the repository's git directory, run inside the repository", async () => {
    sandbox = await makeSandbox();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const repo = join(sandbox.dir, 'repo');
    await mkdir(join(repo, '.git', 'fabric', 'runs'), { recursive: true });
    // Where a daemon keeps its runs when the config's ./runs would be in the work tree.
    const env = { ...testEnv(sandbox, llm.url), FABRIC_RUNS_DIR: join(repo, '.git', 'fabric', 'runs') };
    const done = await runFabricInProcess(
      ['run', '--config', sandbox.configPath, '-s', 'units', '--json', 'Convert 3 km to miles'],
      { env, cwd: repo },
    );
    const { run_id } = JSON.parse(done.stdout) as RunResult;
    // Inside the repository, with the default ./runs: the run is found (and refused as ended).
    const found = await runFabricInProcess(['resume', '--config', sandbox.configPath, run_id], {
      env: { ...env, FABRIC_RUNS_DIR: join(repo, 'runs') },
      cwd: repo,
    });
    expect(found.exitCode).toBe(2);
    expect(found.stderr).toContain('it succeeded: there is nothing to resume');
  });

  it('gives a run that used its steps N more with --max-steps, and takes its last run_end as its outcome', async () => {
    sandbox = await makeSandbox();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const env = testEnv(sandbox, llm.url);
    const first = await runFabricInProcess(
      [
        'run',
        '--config',
        sandbox.configPath,
        '-s',
        'units',
        '--max-steps',
        '1',
        '--json',
        'Convert 3 km to miles',
      ],
      { env, cwd: sandbox.dir },
    );
    expect(first.exitCode, first.stderr).toBe(3);
    const runId = (JSON.parse(first.stdout) as RunResult).run_id;

    const without = await resume([runId], env);
    expect(without.exitCode).toBe(2);
    expect(without.stderr).toContain('Give it more with --max-steps N');

    const out = await resume([runId, '--max-steps', '3', '--json'], env);
    expect(out.exitCode, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ run_id: runId, status: 'succeeded' });
    const ends = (await events(runId)).filter((event) => event.kind === 'run_end');
    expect(ends.map((event) => event.kind === 'run_end' && event.status)).toEqual(['max_steps', 'succeeded']);
    // The request after the resume carries the one before it whole, and the model is told it may go on.
    expect(llm.chatRequests()).toHaveLength(3);
    const before = JSON.parse(sent(1)) as { messages: { role: string; content: string }[] };
    const after = JSON.parse(sent(2)) as { messages: { role: string; content: string }[] };
    expect(JSON.stringify(after.messages.slice(0, before.messages.length))).toBe(
      JSON.stringify(before.messages),
    );
    expect(after.messages.at(-1)?.content).toContain('The run was given more steps');
    const listed = await runFabricInProcess(['runs', '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(JSON.parse(listed.stdout)).toMatchObject({ runs: [{ run_id: runId, status: 'succeeded' }] });
    // Replay reads the resumed run as one: the resume on its timeline, and the re-run given the
    // steps the resume gave, so it ends as the run did.
    const replay = (extra: readonly string[]) =>
      runFabricInProcess(['replay', runId, '--json', '--config', sandbox?.configPath ?? '', ...extra], {
        env,
        cwd: sandbox?.dir ?? '',
      });
    const timeline = JSON.parse((await replay([])).stdout) as {
      entries: { kind: string; text: string }[];
      totals: { status: string };
    };
    expect(timeline.totals.status).toBe('succeeded');
    expect(timeline.entries.find((entry) => entry.kind === 'run_resumed')?.text).toBe(
      `↺ resumed after max_steps (line ${ends[0]?.seq}) by process ${process.pid} · ${MODEL} on lm_studio ${llm.url}`,
    );
    const executed = await replay(['--execute']);
    expect(JSON.parse(executed.stdout), executed.stderr).toMatchObject({
      identical: true,
      replay: { status: 'succeeded' },
    });
  });

  it('resumes through POST /v1/runs/:id/resume (202 and Location), and answers 409 for a run that succeeded', async () => {
    sandbox = await makeSandbox();
    const [convert, rejected, accepted] = CONVERSION_SCRIPT;
    if (!convert || !rejected || !accepted) throw new Error('script');
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [convert, { hang: true }, rejected, accepted],
    });
    const env = testEnv(sandbox, llm.url);
    const runId = await killedRun(['-s', 'units', 'Convert 3 km to miles'], env, 2);
    const fabric = await makeFabric(sandbox, llm.url);
    const hub = new RunHub(fabric);
    const app = createApp({ fabric, token: undefined, requireToken: false, hub });
    cleanups.push(() => fabric.close());
    cleanups.push(() => hub.close());

    const response = await app.request(`/v1/runs/${runId}/resume`, { method: 'POST' });
    expect(response.status).toBe(202);
    expect(response.headers.get('location')).toBe(`/v1/runs/${runId}`);
    expect(await response.json()).toMatchObject({ run_id: runId, status: 'running' });
    await vi.waitFor(async () => {
      const view = (await (await app.request(`/v1/runs/${runId}`)).json()) as { status: string };
      expect(view.status).toBe('succeeded');
    }, PATIENCE);
    expect(sent(2)).toBe(sent(1));

    const again = await app.request(`/v1/runs/${runId}/resume`, { method: 'POST' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { code: 'run_not_resumable' } });
  });

  it('finds a daemon run in its repository (--repo) and goes on with it there', async () => {
    sandbox = await makeSandbox();
    const [convert, rejected, accepted] = CONVERSION_SCRIPT;
    if (!convert || !rejected || !accepted) throw new Error('script');
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [convert, { hang: true }, rejected, accepted],
    });
    const env = testEnv(sandbox, llm.url);
    const repo = await daemonRepo({});
    cleanups.push(() => rm(repo, { recursive: true, force: true }));
    const runId = await killedRun(['-s', 'units', '--workspace', repo, 'Convert 3 km to miles'], env, 2);
    // Where a daemon keeps its runs: the repository's git directory, not the config's runs_dir.
    const daemonRuns = join(repo, '.git/fabric/runs');
    await mkdir(daemonRuns, { recursive: true });
    await rename(join(sandbox.runsDir, runId), join(daemonRuns, runId));

    const elsewhere = await resume([runId], env);
    expect(elsewhere.exitCode).toBe(2);
    expect(elsewhere.stderr).toContain(`No run "${runId}" in ${sandbox.runsDir}`);
    const out = await resume([runId, '--repo', repo, '--json'], env);
    expect(out.exitCode, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({
      run_id: runId,
      status: 'succeeded',
      runlog: join(daemonRuns, runId, 'runlog.jsonl'),
    });
    const path = join(daemonRuns, runId, 'runlog.jsonl');
    const kinds = parseRunlog(await readFile(path, 'utf8'), path).events.map((event) => event.kind);
    expect(kinds).toContain('run_resumed');
    expect(kinds.at(-1)).toBe('run_end');
    expect(await readdir(sandbox.runsDir).catch(() => [])).not.toContain(runId);
  });
});
