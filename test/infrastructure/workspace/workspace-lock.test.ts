import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FabricError } from '../../../src/domain/errors.ts';
import { lockWorkspace, type WorkspaceHolder } from '../../../src/infrastructure/workspace/workspace-lock.ts';
import { ROOT } from '../../support/fabric-cli.ts';

let base: string;
let lockDir: string;
let ws: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'fabric-wslock-'));
  lockDir = join(base, 'locks');
  ws = join(base, 'my workspace');
  await mkdir(ws);
});
afterAll(() => rm(base, { recursive: true, force: true }));

const never = () => new AbortController().signal;

async function failure(promise: Promise<unknown>): Promise<FabricError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(FabricError);
  return error as FabricError;
}

describe('lockWorkspace', () => {
  it('lets a second run of the process wait its turn, and says who holds the workspace', async () => {
    const first = await lockWorkspace(ws, 'run-1', { wait: true, signal: never(), lockDir });
    const told: WorkspaceHolder[] = [];
    const order: string[] = [];
    const second = lockWorkspace(ws, 'run-2', {
      wait: true,
      signal: never(),
      lockDir,
      onWait: (h) => told.push(h),
    }).then((lease) => {
      order.push('second holds');
      return lease;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    order.push('first releases');
    await first.release();
    const lease = await second;
    expect(order).toEqual(['first releases', 'second holds']);
    expect(told.map((holder) => holder.run_id)).toEqual(['run-1']);
    await lease.release();
  });

  it('refuses with workspace_busy, naming the run, when asked not to wait; through a symlink too', async () => {
    const held = await lockWorkspace(ws, 'run-3', { wait: true, signal: never(), lockDir });
    const link = join(base, 'link to ws');
    await symlink(ws, link);
    const error = await failure(lockWorkspace(link, 'run-4', { wait: false, signal: never(), lockDir }));
    expect(error.code).toBe('workspace_busy');
    expect(error.message).toContain(`The workspace ${ws} is in use by run run-3`);
    await held.release();
    await (await lockWorkspace(link, 'run-4', { wait: false, signal: never(), lockDir })).release();
  });

  it('stops waiting with run_cancelled when the run is cancelled, and lets the next one through', async () => {
    const held = await lockWorkspace(ws, 'run-5', { wait: true, signal: never(), lockDir });
    const controller = new AbortController();
    const cancelled = failure(lockWorkspace(ws, 'run-6', { wait: true, signal: controller.signal, lockDir }));
    const next = lockWorkspace(ws, 'run-7', { wait: true, signal: never(), lockDir });
    controller.abort(new Error('Ctrl-C'));
    expect((await cancelled).code).toBe('run_cancelled');
    await held.release();
    await (await next).release();
  });

  it('keeps two processes apart, and takes over the lock of a process that died', async () => {
    const script = `
      import { lockWorkspace } from ${JSON.stringify(join(ROOT, 'src/infrastructure/workspace/workspace-lock.ts'))};
      await lockWorkspace(process.argv[1], 'other-run', { wait: false, signal: new AbortController().signal, lockDir: process.argv[2] });
      console.log('held');
      setInterval(() => {}, 1000);
    `;
    const child = execa(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script, ws, lockDir],
      {
        cwd: ROOT,
        reject: false,
      },
    );
    await new Promise<void>((resolve) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('held')) resolve();
      });
    });
    const error = await failure(lockWorkspace(ws, 'run-8', { wait: false, signal: never(), lockDir }));
    expect(error.message).toMatch(new RegExp(`in use by run other-run \\(process ${child.pid} on `));
    const waiting = lockWorkspace(ws, 'run-9', { wait: true, signal: never(), lockDir, pollMs: 20 });
    child.kill('SIGKILL');
    await child;
    await (await waiting).release();
  });
});
