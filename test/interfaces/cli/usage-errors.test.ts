import { createServer, type Server } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';

/** Mistakes a new user makes, through the real binary: each says what is wrong and what to do, exit 2. */
describe('fabric given a mistake', () => {
  let sandbox: Sandbox;
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    sandbox = await makeSandbox({
      specialists: { rust: { builder: 'builtin:rust' } },
    });
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as { port: number }).port;
    await writeFile(join(sandbox.dir, 'notes.txt'), 'a file');
  });
  afterAll(async () => {
    await new Promise((resolve) => taken.close(resolve));
    await sandbox.cleanup();
  });

  const fabric = (args: string[]) =>
    spawnFabric([...args, '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });

  it('says a port is taken and how to pick another, exit 2', async () => {
    const result = await fabric(['serve', '--port', String(port)]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(
      `fabric serve: Port ${port} is already in use on 127.0.0.1 (another fabric serve, or another program). ` +
        'Pick another with --port N, or --port 0 for any free port.',
    );
    expect(result.stderr).not.toMatch(/Unexpected error|EADDRINUSE/);
  });

  it('says a host that is not this machine cannot be listened on, exit 2', async () => {
    const result = await spawnFabric(
      ['serve', '--host', '192.0.2.1', '--port', '0', '--config', sandbox.configPath],
      {
        env: testEnv(sandbox, 'http://127.0.0.1:9', { FABRIC_API_TOKEN: 't' }),
        cwd: sandbox.dir,
      },
    );
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/Cannot listen on 192\.0\.2\.1: it is not an address of this machine/);
  });

  it('says what fabric health checks when no subject is given, exit 2', async () => {
    const result = await fabric(['health']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^fabric health needs to know what to check: `fabric health lm`/);
  });

  it('refuses a --workspace that does not exist or is a file before looking for a model, exit 2', async () => {
    for (const [workspace, problem] of [
      ['no such dir', 'does not exist'],
      ['notes.txt', 'is a file, not a directory'],
    ] as const) {
      const result = await fabric(['run', '-s', 'rust', '--workspace', workspace, 'task']);
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(`the workspace ${join(sandbox.dir, workspace)} ${problem}`);
    }
  });

  it('says a --config that is a directory is not a config file, and names the file to give', async () => {
    const result = await spawnFabric(['specialists', '--config', sandbox.dir], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(
      `${sandbox.dir} (from --config) is a directory, not a config file. Name the file, e.g. ${join(sandbox.dir, 'fabric.yaml')}.`,
    );
  });

  it('refuses a config whose runs_dir names the config file itself, before anything runs', async () => {
    const self = join(sandbox.dir, 'self.yaml');
    await writeFile(self, 'runs_dir: ./self.yaml\ncontrol: { enabled: false }\nspecialists: {}\n');
    const result = await spawnFabric(['specialists', '--config', self], {
      env: { ...testEnv(sandbox, 'http://127.0.0.1:9'), FABRIC_RUNS_DIR: '' },
      cwd: sandbox.dir,
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(
      `runs_dir names ${self}, which is the config file itself, not a directory`,
    );
  });

  it('says an export --out that is a file cannot take the exports, instead of blaming the database', async () => {
    const result = await fabric(['control', 'export', '--out', join(sandbox.dir, 'notes.txt')]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(
      `Cannot write the exports to ${join(sandbox.dir, 'notes.txt')}: it (or a folder above it) is a file`,
    );
    expect(result.stderr).not.toMatch(/FABRIC_DSN|database/);
  });

  it('answers a run id that names no run with exit 2', async () => {
    const result = await fabric(['runs', 'show', 'no-such-run']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/No run "no-such-run" in .*`fabric runs` lists the runs/);
  });
});
