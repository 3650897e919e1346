import { type ChildProcess, spawn } from 'node:child_process';
import process from 'node:process';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** How a stdio MCP server is started: the complete environment, never the fabric's own. */
export interface StdioLaunch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
}

const STDERR_TAIL_CHARS = 2000;
const GRACE_MS = 1000;

/**
 * A stdio client transport that starts the server in its own process group, so that closing
 * it ends every process the server started (`npx` → `node`, a shell wrapper → its child), and
 * passes exactly the environment it is given. The SDK's `StdioClientTransport` kills only the
 * direct child and always merges a few variables of the parent's environment in.
 */
export class ProcessGroupStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;

  readonly #launch: StdioLaunch;
  readonly #buffer = new ReadBuffer();
  #child: ChildProcess | undefined;
  #exit: Promise<void> = Promise.resolve();
  #running = false;
  #stderr = '';

  constructor(launch: StdioLaunch) {
    this.#launch = launch;
  }

  /** The server's pid (its process group id too), once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Whether the server process is still running. */
  get running(): boolean {
    return this.#running;
  }

  /** The end of what the server wrote to stderr: the best clue when it fails to start or dies. */
  get stderrTail(): string {
    return this.#stderr.trim();
  }

  start(): Promise<void> {
    if (this.#child) return Promise.reject(new Error('The MCP stdio transport is already started.'));
    const { command, args, env, cwd } = this.#launch;
    const child = spawn(command, [...args], {
      env: { ...env },
      cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group: the whole tree can be signalled at close (see #signalGroup).
      detached: true,
      shell: false,
      windowsHide: true,
    });
    this.#child = child;
    this.#exit = new Promise((resolve) => child.once('close', () => resolve()));
    child.once('close', () => {
      this.#running = false;
      this.onclose?.();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      try {
        this.#buffer.append(chunk);
      } catch (error) {
        // A message beyond the buffer bound: the stream cannot be resynchronised.
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        this.close().catch(() => {});
        return;
      }
      this.#drain();
    });
    // stderr is kept (bounded) rather than inherited: `fabric mcp` must write only MCP to stdout,
    // and a server's complaints are the best explanation when it fails.
    child.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    for (const stream of [child.stdin, child.stdout, child.stderr]) {
      stream?.on('error', (error: Error) => this.onerror?.(error));
    }
    return new Promise((resolve, reject) => {
      child.on('error', (error) => {
        if (!this.#running) reject(error);
        this.onerror?.(error);
      });
      child.once('spawn', () => {
        this.#running = true;
        resolve();
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || !this.#running || stdin.destroyed) {
      return Promise.reject(new Error('The MCP server process is not running.'));
    }
    return new Promise((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Ends stdin (the polite stop), then SIGTERM, then SIGKILL to the whole process group. */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child || child.pid === undefined) return;
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    try {
      child.stdin?.end();
    } catch {
      // Already closed: the signals below still apply.
    }
    if (!exited()) await this.#waitForExit(GRACE_MS);
    if (!exited()) {
      this.#signalGroup(child.pid, 'SIGTERM');
      await this.#waitForExit(GRACE_MS);
    }
    // Also after a clean exit: descendants the server left behind share its group.
    this.#signalGroup(child.pid, 'SIGKILL');
    if (!exited()) await this.#waitForExit(GRACE_MS);
    this.#buffer.clear();
  }

  #waitForExit(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    return Promise.race([this.#exit, timeout]).finally(() => clearTimeout(timer));
  }

  #signalGroup(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  }

  #drain(): void {
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (error) {
        // A line that is not JSON-RPC (a server logging to stdout): report it, keep reading.
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }
}
