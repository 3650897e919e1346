/** `fabric serve` as a subprocess, as a user starts it: the URL from stderr, the memory from /proc. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT } from '../../test/support/fabric-cli.ts';

export interface ServeProcess {
  readonly url: string;
  readonly pid: number;
  /** Everything it wrote to stderr so far (for the message when something fails). */
  readonly stderr: () => string;
  /** SIGTERM, then its exit code (it cancels nothing here: every run has ended). */
  stop(): Promise<number | null>;
}

/** Starts `node bin/fabric.mjs serve --port 0 --config <configPath>` and waits for its URL. */
export async function startServe(
  configPath: string,
  env: Record<string, string>,
  cwd: string,
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin/fabric.mjs'), 'serve', '--port', '0', '--config', configPath],
    {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      stderr += text;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`bench: fabric serve exited ${code}:\n${stderr}`)));
  });
  return {
    url,
    pid: pidOf(child),
    stderr: () => stderr,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

function pidOf(child: ChildProcess): number {
  if (child.pid === undefined) throw new Error('bench: fabric serve did not start');
  return child.pid;
}

/** Peak resident memory of a process in MiB (VmHWM), while it is alive. */
export async function peakRssMiB(pid: number | 'self'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`bench: no VmHWM in /proc/${pid}/status`);
  return Number(kib) / 1024;
}

/**
 * Waits until a process is idle: at most one clock tick (10 ms) of CPU in each of three
 * 100 ms samples, or `timeoutMs`. A server's background work (a control-plane mirror writing
 * its backlog) would otherwise fall on whatever is measured next.
 */
export async function waitQuiet(pid: number, timeoutMs = 30_000): Promise<void> {
  const cpuTicks = async () => {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3, utime 14 and stime 15 (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  const deadline = performance.now() + timeoutMs;
  let last = await cpuTicks();
  for (let calm = 0; calm < 3 && performance.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = await cpuTicks();
    calm = now - last <= 1 ? calm + 1 : 0;
    last = now;
  }
}
