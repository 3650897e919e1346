import { execa } from 'execa';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DAEMON_CONFIG,
  addModule,
  calls,
  daemonRepo,
  finish,
  git,
  rustModule,
  taskKey,
} from '../../support/daemon-repo.ts';
import {
  type Sandbox,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { listeningOn } from '../../support/served.ts';

const MODELS = [{ id: 'qwen/qwen3-coder-30b', toolUse: true }];
// Waiting for another process to get somewhere, not a measure of speed.
const PATIENCE = { timeout: 180_000, interval: 100 };

interface Event {
  readonly event: string;
  readonly run_id?: string;
  readonly approval_id?: string;
  readonly call?: string;
  readonly ref?: string;
  readonly reason?: string;
  readonly after_approval?: string;
  readonly change?: string;
  readonly task?: {
    readonly change: string;
    readonly id: string;
    readonly attempts: number;
    readonly run_ids: readonly string[];
    readonly status: string;
    readonly commit: string | null;
  };
}

/** The daemon's config: its validation allowed, `cargo tree` asked about (SPEC §19). */
const CONFIG = {
  ...DAEMON_CONFIG,
  policy: { rules: [{ tool: 'shell', command: 'cargo tree', decision: 'ask' }] },
};

function lastMessages(body: unknown, count: number): string[] {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  return messages.slice(-count).map((message) => String(message.content));
}

describe('fabric daemon parks a run on an approval and goes on with other changes (SPEC §19)', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  /** Two changes: alpha's run needs `cargo tree` after its first edits; beta's needs nothing. */
  async function twoChanges() {
    const repo = await daemonRepo({
      'openspec/changes/alpha/proposal.md': '# Alpha\n',
      'openspec/changes/alpha/tasks.md': '## 1. Shapes\n- [ ] 1.1 Add double\n',
      'openspec/changes/beta/proposal.md': '# Beta\n',
      'openspec/changes/beta/tasks.md': '## 1. Area\n- [ ] 1.1 Test a square\n',
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [
        {
          match: taskKey('alpha', '1.1'),
          script: [
            addModule('double', rustModule('double', 'x * 2', 'assert_eq!(super::double(4), 8);')),
            calls({ name: 'shell', arguments: { command: 'cargo tree' } }),
            finish('Added double, having looked at the tree.'),
          ],
        },
        {
          match: taskKey('beta', '1.1'),
          script: [
            calls({
              name: 'edit_file',
              arguments: {
                path: 'src/lib.rs',
                old_text: 'assert_eq!(area(2, 3), 6);',
                new_text: 'assert_eq!(area(2, 3), 6);\n        assert_eq!(area(3, 3), 9);',
              },
            }),
            finish('Tested a square.'),
          ],
        },
      ],
    });
    sandbox = await makeSandbox(CONFIG);
    return { repo, env: testEnv(sandbox, server.url), fake: server, box: sandbox };
  }

  it('sets the parked run’s edits aside, commits the other change, and on the answer (over HTTP, a fabric serve beside it) brings them back and finishes under the same run', async () => {
    const { repo, env, fake, box } = await twoChanges();
    // A server on the same runs directory: it answers, but must leave the daemon's run to the daemon.
    const serve = spawnFabric(['serve', '--port', '0', '--config', box.configPath], { env, cwd: box.dir });
    cleanups.push(async () => {
      serve.kill('SIGKILL');
      await serve;
    });
    const { url } = await listeningOn(serve);
    const head0 = await git(repo, 'rev-parse', 'HEAD');
    // An interval far longer than the test: only the answer can wake the daemon.
    const daemon = spawnFabric(
      ['daemon', '--repo', repo, '--interval', '600', '--config', box.configPath, '--json'],
      { env, cwd: box.dir },
    );
    cleanups.push(async () => {
      daemon.kill('SIGKILL');
      await daemon;
    });
    let out = '';
    daemon.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const events = () =>
      out
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Event);
    const seen = (event: string, change?: string) =>
      events().find(
        (e) =>
          e.event === event && (change === undefined || e.task?.change === change || e.change === change),
      );

    await vi.waitFor(() => expect(seen('idle')).toBeDefined(), PATIENCE);
    const parked = seen('task_parked');
    expect(parked, out).toMatchObject({
      call: 'cargo tree',
      task: { change: 'alpha', id: '1.1', status: 'awaiting_approval', attempts: 0 },
    });
    const { run_id: runId, approval_id: approvalId, ref } = parked as Required<Event>;
    expect(ref).toBe(`refs/fabric/parked/${runId}`);
    expect(seen('change_stopped', 'alpha')).toMatchObject({ reason: 'awaiting_approval' });
    // Meanwhile beta was done and committed, on a tree without alpha's edits.
    expect(seen('task_done', 'beta')?.task?.status).toBe('done');
    expect(await git(repo, 'rev-list', '--count', `${head0}..HEAD`)).toBe('1');
    expect(await git(repo, 'show', '--name-only', '--format=', 'HEAD')).not.toContain('double');
    expect(await git(repo, 'status', '--porcelain')).toBe('');
    expect(seen('pass_end')).toMatchObject({ done: 1, blocked: 0, awaiting_approval: 1 });
    // Alpha's edits are kept outside the branch and the stash.
    expect(await git(repo, 'show', '--name-only', '--format=', ref)).toBe('src/double.rs\nsrc/lib.rs');
    expect(await git(repo, 'stash', 'list')).toBe('');
    // Parked: two model requests, none held while it waits.
    const alphaRequests = () =>
      fake.chatRequests().filter((r) => JSON.stringify(r.body).includes('Add double'));
    expect(alphaRequests()).toHaveLength(2);

    const status = await runFabricInProcess(
      ['daemon', 'status', '--repo', repo, '--json', '--config', box.configPath],
      { env, cwd: box.dir },
    );
    expect(status.exitCode, status.stderr).toBe(0);
    const alpha = (
      JSON.parse(status.stdout) as { changes: { id: string; awaiting_approval: number; tasks: unknown[] }[] }
    ).changes.find((c) => c.id === 'alpha');
    expect(alpha).toMatchObject({
      awaiting_approval: 1,
      tasks: [
        {
          id: '1.1',
          status: 'awaiting_approval',
          approval: { id: approvalId, call: 'cargo tree', run_id: runId },
        },
      ],
    });

    // Resuming it by hand is refused: the daemon holds its edits.
    const byHand = await runFabricInProcess(['resume', runId, '--config', box.configPath], {
      env,
      cwd: box.dir,
    });
    expect(byHand.exitCode).toBe(2);
    expect(byHand.stderr).toContain("it is the OpenSpec daemon's run");

    const answer = await fetch(`${url}/v1/approvals/${approvalId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(answer.status, await answer.clone().text()).toBe(200);

    await vi.waitFor(() => expect(seen('task_done', 'alpha')).toBeDefined(), PATIENCE);
    expect(seen('task_resumed', 'alpha')).toMatchObject({ run_id: runId, after_approval: approvalId });
    // One attempt, one run: the parked one, gone on with.
    expect(seen('task_done', 'alpha')?.task).toMatchObject({ status: 'done', attempts: 1, run_ids: [runId] });
    // The approved command ran in the sandbox: its real output is in the next request.
    expect(alphaRequests()).toHaveLength(3);
    const [toolResult, drift] = lastMessages(alphaRequests()[2]!.body, 2);
    expect(toolResult).toContain('fixture v0.1.0');
    expect(toolResult).toContain('exit code 0');
    // And the model is told what beta's commit changed under it while it was parked.
    expect(drift).toContain('files of the workspace were changed');
    expect(drift).toContain('src/lib.rs');
    // Alpha's commit holds the edits set aside and beta's test too; the ref is gone.
    expect(await git(repo, 'rev-list', '--count', `${head0}..HEAD`)).toBe('2');
    expect(await git(repo, 'show', '--name-only', '--format=', 'HEAD')).toContain('src/double.rs');
    const lib = await git(repo, 'show', 'HEAD:src/lib.rs');
    expect(lib).toContain('pub mod double;');
    expect(lib).toContain('assert_eq!(area(3, 3), 9);');
    expect(await git(repo, 'status', '--porcelain')).toBe('');
    const gone = await execa('git', ['rev-parse', '-q', '--verify', ref], { cwd: repo, reject: false });
    expect(gone.exitCode).toBe(1);

    // The server never went on with it: one resume, the daemon's, and nothing more asked.
    expect(out.match(/"task_resumed"/g)).toHaveLength(1);
    expect(alphaRequests()).toHaveLength(3);
    daemon.kill('SIGTERM');
    expect((await daemon).exitCode).toBe(130);
  });

  it('with --once ends 5 with the task awaiting approval; the next daemon, once it is answered, goes on with it', async () => {
    const { repo, env, box } = await twoChanges();
    const args = ['daemon', '--repo', repo, '--once', '--config', box.configPath, '--json'];
    const first = await spawnFabric(args, { env, cwd: box.dir });
    expect(first.exitCode, first.stderr).toBe(5);
    expect(first.stderr).toContain('waits for approval of `cargo tree`');
    expect(first.stderr).toContain('1 awaiting approval');
    const stop = first.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event & { awaiting_approval?: number; blocked?: number })
      .find((e) => e.event === 'daemon_stop');
    expect(stop).toMatchObject({ blocked: 0, awaiting_approval: 1 });
    expect(await git(repo, 'status', '--porcelain')).toBe('');

    // Still pending: a second pass leaves it parked, and changes nothing.
    const again = await spawnFabric(args, { env, cwd: box.dir });
    expect(again.exitCode, again.stderr).toBe(5);
    expect(again.stdout).not.toContain('"task_resumed"');

    const listed = await runFabricInProcess(['approvals', 'list', '--json', '--config', box.configPath], {
      env,
      cwd: box.dir,
    });
    const [pending] = JSON.parse(listed.stdout) as { id: string; state: string }[];
    expect(pending?.state).toBe('pending');
    const answer = await runFabricInProcess(
      [
        'approvals',
        'answer',
        pending!.id,
        'deny',
        '--message',
        'no need: it has no dependencies',
        '--config',
        box.configPath,
      ],
      { env, cwd: box.dir },
    );
    expect(answer.exitCode, answer.stderr).toBe(0);
    expect(answer.stdout).toContain("is the OpenSpec daemon's: the daemon brings its edits back");

    const third = await spawnFabric(args, { env, cwd: box.dir });
    expect(third.exitCode, third.stderr).toBe(0);
    const done = third.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event)
      .find((e) => e.event === 'task_done' && e.task?.change === 'alpha');
    expect(done?.task).toMatchObject({ attempts: 1 });
    expect(await git(repo, 'show', '--name-only', '--format=', 'HEAD')).toContain('src/double.rs');
    expect(await git(repo, 'status', '--porcelain')).toBe('');
  });
});
