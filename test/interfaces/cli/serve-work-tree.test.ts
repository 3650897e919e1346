import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { git } from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { listeningOn, runToEnd } from '../../support/served.ts';
import { tempDir } from '../../support/temp-dirs.ts';

const MODEL = 'qwen/qwen3-coder-30b';

/** A git repository with one committed file and nothing else: no `openspec/`, no daemon. */
async function plainRepo(): Promise<string> {
  const repo = await tempDir('plain-repo-');
  await writeFile(join(repo, 'README.md'), '# plain\n');
  await git(repo, 'init', '-q', '-b', 'main');
  await git(repo, 'config', 'user.name', 'Serve Test');
  await git(repo, 'config', 'user.email', 'serve@example.com');
  await git(repo, 'add', '-A');
  await git(repo, 'commit', '-qm', 'a plain repository');
  return repo;
}

/** The work tree's changes, every untracked file named. */
function porcelain(repo: string): Promise<string> {
  return git(repo, 'status', '--porcelain', '--untracked-files=all');
}

describe('fabric serve inside a git repository no daemon works in (issue 34)', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await llm?.stop();
    llm = undefined;
    await sandbox?.cleanup();
    sandbox = undefined;
  });

  it('writes nothing into the work tree, and still lists the runs `fabric run` wrote into ./runs', async () => {
    const repo = await plainRepo();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [...CONVERSION_SCRIPT, ...CONVERSION_SCRIPT],
    });
    // The embedded control database on: `fabric serve` opens it at start, where it keeps its runs.
    sandbox = await makeSandbox({ control: { enabled: true } });
    // No runs_dir and no FABRIC_RUNS_DIR: the default ./runs, in the repository.
    const env = {
      LM_STUDIO_URL: llm.url,
      OLLAMA_HOST: '127.0.0.1:9',
      FABRIC_CONFIG: sandbox.configPath,
      NO_COLOR: '1',
    };
    const ran = await spawnFabric(['run', '-s', 'units', '--json', 'Convert 3 km to miles'], {
      env,
      cwd: repo,
    });
    expect(ran.exitCode, ran.stderr).toBe(0);
    const cliRun = (JSON.parse(ran.stdout) as { run_id: string }).run_id;
    const before = await porcelain(repo);
    expect(before).toBe(`?? runs/${cliRun}/runlog.jsonl`);

    const serve = spawnFabric(['serve', '--port', '0'], { env, cwd: repo });
    let httpRun: string;
    try {
      const { url, stderr } = await listeningOn(serve);
      const run = await runToEnd(url, { specialist: 'units', task: 'Convert 3 km to miles' });
      expect(run.status, stderr()).toBe('succeeded');
      httpRun = run.run_id as string;
      const listed = (await (await fetch(`${url}/v1/runs`)).json()) as { runs: { run_id: string }[] };
      expect(listed.runs.map((r) => r.run_id).sort()).toEqual([cliRun, httpRun].sort());
      // Each is shown, and the viewer opens both.
      expect(((await (await fetch(`${url}/v1/runs/${cliRun}`)).json()) as { status: string }).status).toBe(
        'succeeded',
      );
      expect((await fetch(`${url}/runs/${cliRun}`)).status).toBe(200);
      expect((await fetch(`${url}/runs/${httpRun}`)).status).toBe(200);
      expect(stderr()).toContain(`runs go to ${join(repo, '.git/fabric/runs')}, outside the git work tree`);
    } finally {
      serve.kill('SIGTERM');
      await serve;
    }
    // Only what `fabric run` wrote; the server's run and its database are in the git directory.
    expect(await porcelain(repo)).toBe(before);
    await access(join(repo, '.git/fabric/runs', httpRun, 'runlog.jsonl'));
    // Its embedded database's directory too (in the work tree before: runs/.control/pglite).
    await access(join(repo, '.git/fabric/runs/.control'));
    await expect(access(join(repo, 'runs/.control'))).rejects.toThrow();
  }, 120_000);

  it('keeps a runs directory the user set, even in the work tree', async () => {
    const repo = await plainRepo();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    sandbox = await makeSandbox();
    const env = {
      LM_STUDIO_URL: llm.url,
      OLLAMA_HOST: '127.0.0.1:9',
      FABRIC_CONFIG: sandbox.configPath,
      FABRIC_RUNS_DIR: 'kept-runs',
      NO_COLOR: '1',
    };
    const serve = spawnFabric(['serve', '--port', '0'], { env, cwd: repo });
    try {
      const { url, stderr } = await listeningOn(serve);
      const run = await runToEnd(url, { specialist: 'units', task: 'Convert 3 km to miles' });
      expect(run.status, stderr()).toBe('succeeded');
      expect(await porcelain(repo)).toBe(`?? kept-runs/${run.run_id as string}/runlog.jsonl`);
      expect(stderr()).not.toContain('runs go to');
    } finally {
      serve.kill('SIGTERM');
      await serve;
    }
  }, 120_000);
});
