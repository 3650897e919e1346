import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import type { RunEvent } from '../../src/domain/run-events.ts';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, runFabricInProcess, spawnFabric } from './fabric-cli.ts';
import type { FakeLlmServer } from './fake-llm-server.ts';

/** Waiting for another process to get somewhere (a cargo build included), not a measure of speed. */
export const PATIENCE = { timeout: 120_000, interval: 25 };

/**
 * Real `fabric run` processes SIGKILLed at a boundary, and what the resume tests read of them
 * afterwards (SPEC §18): one place for the set-up the resume end-to-end tests share.
 */
export class KilledRuns {
  private readonly children: ReturnType<typeof spawnFabric>[] = [];

  readonly sandbox: Sandbox;
  readonly env: Record<string, string>;

  constructor(sandbox: Sandbox, env: Record<string, string>) {
    this.sandbox = sandbox;
    this.env = env;
  }

  /** Starts `fabric run ARGS` as a process of its own; `stop` kills what is left of it. */
  spawn(args: readonly string[]) {
    const child = spawnFabric(['run', '--config', this.sandbox.configPath, ...args], {
      env: this.env,
      cwd: this.sandbox.dir,
    });
    this.children.push(child);
    return child;
  }

  /**
   * Starts `fabric run ARGS`, SIGKILLs it as soon as `ready` holds of its runlog (checked as the
   * log grows), and returns the run's id.
   */
  async killWhen(args: readonly string[], ready: (events: RunEvent[]) => boolean): Promise<string> {
    const child = this.spawn(args);
    let runId = '';
    await vi.waitFor(async () => {
      [runId = ''] = (await readdir(this.sandbox.runsDir).catch(() => [])).filter(
        (name) => !name.startsWith('.'),
      );
      expect(ready(await this.events(runId))).toBe(true);
    }, PATIENCE);
    child.kill('SIGKILL');
    expect((await child).signal).toBe('SIGKILL');
    return runId;
  }

  logPath(runId: string): string {
    return join(this.sandbox.runsDir, runId, 'runlog.jsonl');
  }

  /** The run's events as its runlog holds them now; none before the log exists. */
  async events(runId: string): Promise<RunEvent[]> {
    if (runId === '') return [];
    const text = await readFile(this.logPath(runId), 'utf8').catch(() => '');
    return text === '' ? [] : parseRunlog(text, this.logPath(runId)).events;
  }

  /** `fabric resume ARGS` in-process, with the sandbox's config. */
  resume(args: readonly string[]) {
    return runFabricInProcess(['resume', '--config', this.sandbox.configPath, ...args], {
      env: this.env,
      cwd: this.sandbox.dir,
    });
  }

  /** Kills whatever is still running. */
  async stop(): Promise<void> {
    for (const child of this.children.splice(0)) {
      child.kill('SIGKILL');
      await child;
    }
  }
}

/** What the fake's chat request `index` sent, as the server received it: the messages and the tools. */
export function sentRequest(llm: FakeLlmServer | undefined, index: number): string {
  const body = llm?.chatRequests()[index]?.body as { messages: unknown; tools: unknown } | undefined;
  return JSON.stringify({ messages: body?.messages, tools: body?.tools });
}

/** The messages of the fake's chat request `index`. */
export function sentMessages(
  llm: FakeLlmServer | undefined,
  index: number,
): { role: string; content: string }[] {
  const body = llm?.chatRequests()[index]?.body as
    | { messages?: { role: string; content: string }[] }
    | undefined;
  return body?.messages ?? [];
}

/** Whether request `later` begins with everything request `earlier` sent (the prompt cache's prefix). */
export function extendsRequest(llm: FakeLlmServer | undefined, earlier: number, later: number): boolean {
  const before = sentMessages(llm, earlier);
  const after = sentMessages(llm, later);
  return before.length > 0 && JSON.stringify(after.slice(0, before.length)) === JSON.stringify(before);
}
