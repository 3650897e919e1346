import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { FabricError } from '../../src/domain/errors.ts';

const SPECIALISTS = 'specialists: { units: { builder: "builtin:research" } }\n';

describe('the queue setting', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-queue-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const load = async (text: string, env: Record<string, string> = {}) => {
    await writeFile(join(dir, 'fabric.yaml'), `${SPECIALISTS}${text}`);
    return loadConfig({ cwd: dir, env });
  };
  const failure = async (text: string, env: Record<string, string> = {}) => {
    const error = await load(text, env).catch((e: unknown) => e);
    if (!(error instanceof FabricError)) throw new Error(`expected a FabricError, got ${String(error)}`);
    return error;
  };

  it('runs in-process by default, with the worker defaults', async () => {
    const config = await load('');
    expect(config.queue).toBe('in_process');
    expect(config.worker).toEqual({
      heartbeat_s: 5,
      dead_after_s: 30,
      concurrency: 1,
      archive_max_mib: 64,
      metrics_port: 0,
      max_resumes: 2,
    });
  });

  it('takes worker.max_resumes as a count from 0, and refuses a fraction or a negative one', async () => {
    expect((await load('worker: { max_resumes: 0 }\n')).worker.max_resumes).toBe(0);
    for (const bad of ['-1', '1.5']) {
      const error = await failure(`worker: { max_resumes: ${bad} }\n`);
      expect(error.code).toBe('config_invalid');
      expect(error.message).toMatch(/max_resumes/);
    }
  });

  it('queues in Postgres when the file says so and a DSN names the server', async () => {
    const config = await load('queue: postgres\ncontrol: { dsn: "postgres://db/fabric" }\n');
    expect(config.queue).toBe('postgres');
  });

  it('takes the queue from FABRIC_QUEUE and the DSN from FABRIC_DSN', async () => {
    const config = await load('', { FABRIC_QUEUE: 'postgres', FABRIC_DSN: 'postgres://db/fabric' });
    expect(config.queue).toBe('postgres');
  });

  it('refuses queue: postgres without a DSN, saying how to name one', async () => {
    const error = await failure('queue: postgres\n');
    expect(error.code).toBe('config_invalid');
    expect(error.message).toMatch(/queue: postgres needs a Postgres server: set FABRIC_DSN/);
  });

  it('sizes the Postgres pools from control.pool_size, 3 by default, and refuses a size below 1', async () => {
    expect((await load('')).control.pool_size).toBe(3);
    expect((await load('control: { pool_size: 1 }\n')).control.pool_size).toBe(1);
    const error = await failure('control: { pool_size: 0 }\n');
    expect(error.code).toBe('config_invalid');
    expect(error.message).toMatch(/control\.pool_size/);
  });

  it('refuses a lease (dead_after_s) shorter than two heartbeats, saying what to raise', async () => {
    const error = await failure(
      'queue: postgres\ncontrol: { dsn: "postgres://db/x" }\nworker: { heartbeat_s: 5, dead_after_s: 8 }\n',
    );
    expect(error.code).toBe('config_invalid');
    expect(error.message).toMatch(
      /worker\.dead_after_s \(8\) must be at least twice worker\.heartbeat_s \(5\).*Raise dead_after_s to 10/,
    );
  });

  it('refuses queue: postgres with the control plane turned off', async () => {
    const error = await failure('queue: postgres\ncontrol: { enabled: false, dsn: "postgres://db/x" }\n');
    expect(error.message).toMatch(/needs the control plane/);
  });

  it('refuses an unknown queue, from the file or the environment', async () => {
    expect((await failure('queue: redis\n')).message).toMatch(/queue/);
    expect((await failure('', { FABRIC_QUEUE: 'redis' })).message).toMatch(
      /FABRIC_QUEUE: expected in_process or postgres/,
    );
  });
});
