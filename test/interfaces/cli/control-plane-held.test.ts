import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { embeddedControlDir } from '../../../src/infrastructure/control/open-control-store.ts';
import { calls, daemonRepo, finish, taskKey } from '../../support/daemon-repo.ts';
import { makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { until } from '../../support/until.ts';

const LOADED_MS = 120_000;

describe('the embedded control database held by `fabric serve`', () => {
  let sandbox: Sandbox | undefined;
  let llm: FakeLlmServer | undefined;
  afterEach(async () => {
    await llm?.stop();
    llm = undefined;
    await sandbox?.cleanup();
  });

  it('a daemon beside the server says nothing about the control plane, and the server writes its run in', async () => {
    sandbox = await makeSandbox({
      control: { enabled: true },
      specialists: {
        rust: {
          builder: 'builtin:rust',
          max_steps: 4,
          sandbox: { allowed_commands: ['cargo build', 'cargo test'], timeout_s: 120 },
        },
      },
    });
    const repo = await daemonRepo({
      'openspec/changes/docs/proposal.md': '# Docs\n',
      'openspec/changes/docs/tasks.md': '## 1. Docs\n- [ ] 1.1 Write notes\n',
    });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      byTask: [
        {
          match: taskKey('docs', '1.1'),
          script: [
            calls({ name: 'write_file', arguments: { path: 'NOTES.md', content: '# Notes\n' } }),
            finish('Wrote notes.'),
          ],
        },
      ],
    });
    const env = testEnv(sandbox, llm.url);
    const serve = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    let serveErr = '';
    serve.stderr?.on('data', (chunk: Buffer) => {
      serveErr += chunk.toString();
    });
    try {
      const url = await until(
        'the server to listen',
        async () => /listening on (http:\/\/\S+)/.exec(serveErr)?.[1],
      );
      // The server holds the database once it has opened it.
      await until(
        'the server to hold the embedded database',
        async () =>
          Number(await readFile(`${embeddedControlDir(sandbox!.runsDir)}.lock`, 'utf8')) === serve.pid
            ? true
            : undefined,
        LOADED_MS,
      );

      // Usage errors open no control plane at all.
      for (const args of [
        ['run', '--specialist', 'rust', '--max-steps', '0', 'x'],
        ['run', '--specialist', 'nope', 'x'],
        ['daemon', '--repo', repo, '--max-attempts', '0'],
      ]) {
        const refused = await spawnFabric([...args, '--config', sandbox.configPath], {
          env,
          cwd: sandbox.dir,
        });
        expect(refused.exitCode, refused.stderr).toBe(2);
        expect(refused.stderr).not.toContain('control plane');
      }

      const daemon = await spawnFabric(
        ['daemon', '--repo', repo, '--once', '--config', sandbox.configPath, '--json'],
        {
          env,
          cwd: sandbox.dir,
        },
      );
      expect(daemon.exitCode, daemon.stderr).toBe(0);
      expect(daemon.stderr).toContain('✓ docs 1.1 committed');
      expect(daemon.stderr).not.toMatch(/control plane|backfill|failed|db_off/);

      // Again, now with runlogs the backfill would look at: still nothing said.
      const again = await spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox.configPath], {
        env,
        cwd: sandbox.dir,
      });
      expect(again.exitCode, again.stderr).toBe(0);
      expect(again.stderr).not.toMatch(/control plane|backfill|failed|db_off/);

      // An export cannot read a database another process holds: it says so and writes nothing,
      // rather than files that call the database off.
      const exported = await spawnFabric(['control', 'export', '--config', sandbox.configPath], {
        env,
        cwd: sandbox.dir,
      });
      expect(exported.exitCode, exported.stderr + exported.stdout).toBe(4);
      expect(exported.stderr).toMatch(new RegExp(`in use by process ${serve.pid}.*GET /v1/exports`));
      await expect(readFile(join(sandbox.runsDir, 'exports', 'lm_indicator.json'), 'utf8')).rejects.toThrow();

      // The holder writes the daemon's run in from its runlog.
      const done = daemon.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { event: string; task?: { run_ids: string[] } })
        .find((event) => event.event === 'task_done');
      const runId = done?.task?.run_ids[0];
      expect(runId).toBeDefined();
      const inStore = await until(
        'the daemon run to reach the store',
        async () => {
          const response = await fetch(`${url}/v1/runs?limit=100`);
          const body = (await response.json()) as { runs: { run_id: string; status: string }[] };
          return body.runs.find((run) => run.run_id === runId && run.status === 'succeeded');
        },
        LOADED_MS,
      );
      expect(inStore?.status).toBe('succeeded');
      expect(serveErr).not.toMatch(/db_off|unavailable|failed/);
    } finally {
      serve.kill('SIGTERM');
      await serve.catch(() => {});
    }
  }, 300_000);
});
