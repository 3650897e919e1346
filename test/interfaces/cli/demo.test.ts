import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { spawnFabric } from '../../support/fabric-cli.ts';

/**
 * `fabric demo` with no model server and no config: the user's own settings point at nothing
 * (a closed port, another runs directory), which the demo must ignore. TMPDIR is the test's, so
 * the demo's directory is found and removed.
 */
function demoEnv(tmp: string): Record<string, string> {
  return {
    TMPDIR: tmp,
    LM_STUDIO_URL: 'http://127.0.0.1:9',
    OLLAMA_HOST: '127.0.0.1:9',
    FABRIC_RUNS_DIR: join(tmp, 'elsewhere'),
    NO_COLOR: '1',
  };
}

function demoDir(stdout: string): string {
  const dir = /Everything is in (\S+):/.exec(stdout)?.[1];
  if (dir === undefined) throw new Error(`fabric demo named no directory:\n${stdout}`);
  return dir;
}

describe('fabric demo', () => {
  let tmp: string | undefined;
  afterEach(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('runs the rust specialist on a copy of the example crate with the scripted model, then says how to look', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'fabric-demo-test-'));
    const result = await spawnFabric(['demo'], { env: demoEnv(tmp), cwd: tmp });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/DEMO with a scripted model \(demo-scripted\)/);
    expect(result.stderr).toMatch(/✓ cargo_check cargo check passed/);
    const dir = demoDir(result.stdout);
    expect(dir.startsWith(tmp)).toBe(true);
    const runId = /Demo run (\S+) succeeded \(model demo-scripted, scripted\)/.exec(result.stdout)?.[1];
    expect(runId, result.stdout).toBeDefined();
    expect(result.stdout).toContain(`fabric replay ${runId}`);
    expect(result.stdout).toContain('fabric demo --serve');

    const region = await readFile(join(dir, 'compositor/src/region.rs'), 'utf8');
    expect(region).toContain('pub fn contains_point(&self, x: i32, y: i32) -> bool {');

    const runlog = join(dir, 'runs', runId ?? '', 'runlog.jsonl');
    const events = parseRunlog(await readFile(runlog, 'utf8'), runlog).events;
    expect(events[0]).toMatchObject({ kind: 'run_start', model: 'demo-scripted', specialist: 'rust' });
    expect(events[0]?.kind === 'run_start' && events[0].task).toMatch(/^\(fabric demo\)/);
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
    const tools = events.flatMap((event) => (event.kind === 'tool_result' ? [event.tool] : []));
    expect(tools).toEqual(['list_files', 'read_file', 'edit_file', 'cargo_check']);

    // What it says to type works there: the run is in `fabric runs`, and not in the user's runs directory.
    const runs = await spawnFabric(['runs'], { env: { TMPDIR: tmp, NO_COLOR: '1' }, cwd: dir });
    expect(runs.exitCode, runs.stderr).toBe(0);
    expect(runs.stdout).toContain(`${runId}  succeeded`);
  });

  it('--serve serves the viewer page of the run on loopback until SIGTERM', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'fabric-demo-test-'));
    const demo = spawnFabric(['demo', '--serve'], { env: demoEnv(tmp), cwd: tmp });
    let stdout = '';
    const page = await new Promise<string>((resolve, reject) => {
      demo.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const found = /(http:\/\/127\.0\.0\.1:\d+\/runs\/\S+)/.exec(stdout)?.[1];
        if (found) resolve(found);
      });
      demo.then((done) => reject(new Error(`fabric demo --serve exited early:\n${done.stderr}`)), reject);
    });
    const runId = page.slice(page.lastIndexOf('/') + 1);
    const response = await fetch(page);
    const html = await response.text();
    expect(response.status, html).toBe(200);
    expect(html).toContain(runId);
    expect(html).toContain('demo-scripted');

    // A plain signal (execa's kill() would SIGKILL after 5 s): closing the control store takes its time.
    process.kill(demo.pid ?? 0, 'SIGTERM');
    const ended = await demo;
    expect(ended.exitCode, ended.stderr).toBe(0);
    expect(ended.stderr).toMatch(/fabric serve: stopped/);
  });

  it('takes no task, and --port only with --serve', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'fabric-demo-test-'));
    const task = await spawnFabric(['demo', 'do something'], { env: demoEnv(tmp), cwd: tmp });
    expect(task.exitCode).toBe(2);
    expect(task.stderr).toMatch(/takes no task.*use fabric run with a real model/);
    const port = await spawnFabric(['demo', '--port', '8080'], { env: demoEnv(tmp), cwd: tmp });
    expect(port.exitCode).toBe(2);
    expect(port.stderr).toMatch(/--port goes with --serve/);
    const help = await spawnFabric(['demo', '--help'], { env: demoEnv(tmp), cwd: tmp });
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/scripted model/);
  });
});
