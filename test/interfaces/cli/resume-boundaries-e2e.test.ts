import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, testEnv } from '../../support/fabric-cli.ts';
import {
  type FakeLlmServer,
  type FakeLlmServerOptions,
  type ScriptedTurn,
  startFakeLlmServer,
} from '../../support/fake-llm-server.ts';
import { KilledRuns, PATIENCE, extendsRequest, sentRequest } from '../../support/killed-run.ts';
import { exampleCrate, rustSandbox } from '../../support/rust-run.ts';

/**
 * SPEC §18's boundaries, each by SIGKILLing a real `fabric run -s rust` there and resuming it with
 * `fabric resume`: during a long `cargo test`, right after a compaction, and between an
 * `edit_file`'s `tool_started` and its result.
 */
const MODEL = 'qwen/qwen3-coder-30b';
const FINISH: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Done.' } }] },
};

describe('fabric resume of a run killed at a boundary of SPEC §18', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let runs: KilledRuns | undefined;
  let workspace: string | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await runs?.stop();
    await llm?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  async function setUp(
    fake: Omit<FakeLlmServerOptions, 'flavor'>,
    extra: Record<string, unknown> = {},
    commands: readonly string[] = [],
  ) {
    workspace = await exampleCrate();
    // As a crate has it: the build is not the workspace's content, so not in its fingerprint.
    await writeFile(join(workspace, '.gitignore'), '/target\n');
    llm = await startFakeLlmServer({ flavor: 'lm_studio', ...fake });
    sandbox = await rustSandbox(extra, commands);
    runs = new KilledRuns(sandbox, testEnv(sandbox, llm.url));
    return { workspace, runs };
  }

  async function resumed(killed: KilledRuns, runId: string) {
    const out = await killed.resume([runId, '--json']);
    expect(out.exitCode, out.stderr).toBe(0);
    const result = JSON.parse(out.stdout) as RunResult;
    expect(result).toMatchObject({ run_id: runId, status: 'succeeded' });
    return killed.events(runId);
  }

  it('runs again a cargo test that was running when the process died (it is idempotent), once more', async () => {
    const { workspace: crate, runs: killed } = await setUp(
      {
        models: [{ id: MODEL, toolUse: true }],
        script: [
          {
            reply: { toolCalls: [{ name: 'shell', arguments: { command: 'cargo test' }, id: 'call_test' }] },
          },
          FINISH,
        ],
      },
      {},
      ['cargo test'],
    );
    // A test that says it is running, then waits for a gate: the process is killed while the
    // `cargo test` it started is in the middle of its tests.
    const target = join(crate, 'target');
    await mkdir(join(crate, 'tests'));
    await writeFile(
      join(crate, 'tests/gate.rs'),
      `#[test]
fn waits_for_the_gate() {
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    std::fs::write(target.join("resume-waiting"), "").unwrap();
    while !target.join("resume-gate").exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
`,
    );
    const runId = await killed.killWhen(['-s', 'rust', '--workspace', crate, 'Run the tests'], () =>
      existsSync(join(target, 'resume-waiting')),
    );
    const before = await killed.events(runId);
    expect(before.map((event) => event.kind)).not.toContain('tool_result');
    await writeFile(join(target, 'resume-gate'), '');

    const log = await resumed(killed, runId);
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      in_flight: [{ call_id: 'call_test', tool: 'shell', effect: 'idempotent', action: 'rerun' }],
      drift: [],
    });
    const results = log.filter((event) => event.kind === 'tool_result' && event.call_id === 'call_test');
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results[0])).toContain('test waits_for_the_gate ... ok');
    // The model was asked each turn once, the second going on from the first.
    expect(llm?.chatRequests()).toHaveLength(2);
    expect(extendsRequest(llm, 0, 1)).toBe(true);
  });

  it('asks again, right after a compaction, the compacted conversation it was sending', async () => {
    // Reads that outgrow an 8k window: the fake refuses a request over it, as LM Studio does.
    const notes = (n: number) =>
      Array.from(
        { length: 70 },
        (_, i) => `// notes ${n}.${i}: damage tracking per output, region ${i}`,
      ).join('\n');
    const reads: ScriptedTurn[] = Array.from({ length: 8 }, (_, i) => ({
      reply: { toolCalls: [{ name: 'read_file', arguments: { path: `notes-${i + 1}.txt` } }] },
    }));
    // The first request that carries a stubbed result (the compaction's work) hangs, once.
    let hungAt: number | undefined;
    const { workspace: crate, runs: killed } = await setUp(
      {
        lmStudioV1Api: true,
        models: [{ id: MODEL, toolUse: true, contextLength: 8192, enforceWindow: true }],
        script: [...reads, FINISH],
        respond: ({ tools, messages }) => {
          if (tools.length === 0) return { reply: { content: 'I read some notes; the rest are left.' } };
          if (hungAt !== undefined || !messages.some((m) => m.content.includes('removed to fit the window')))
            return undefined;
          hungAt = (llm?.chatRequests().length ?? 0) - 1;
          return { hang: true };
        },
      },
      { loop: { max_steps: 20 } },
    );
    for (let n = 1; n <= 8; n += 1) await writeFile(join(crate, `notes-${n}.txt`), notes(n));
    const runId = await killed.killWhen(
      ['-s', 'rust', '--workspace', crate, 'Read the notes'],
      () => hungAt !== undefined,
    );
    const killedLog = await killed.events(runId);
    const compactions = killedLog.filter((event) => event.kind === 'compaction');
    expect(compactions.length).toBeGreaterThan(0);
    // Nothing came after the compacted request was sent.
    expect(killedLog.at(-1)?.kind).toBe('llm_request');
    const hung = hungAt ?? -1;

    const log = await resumed(killed, runId);
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      turn_asked_again: true,
      in_flight: [],
      drift: [],
    });
    // The request after the resume is the compacted one, byte for byte; no recorded turn asked again.
    expect(sentRequest(llm, hung + 1)).toBe(sentRequest(llm, hung));
    expect(sentRequest(llm, hung)).toContain('removed to fit the window');
    const reads8 = log.filter((event) => event.kind === 'tool_result' && event.tool === 'read_file');
    expect(reads8).toHaveLength(8);
    expect(log.filter((event) => event.kind === 'llm_response').length).toBe(
      (llm?.chatRequests().length ?? 0) - 1,
    );
  });

  it('makes once an edit_file the process died in the middle of (after tool_started, before the write)', async () => {
    const OLD = '//! The core of a compositor, without the protocol and the GPU';
    const NEW = '//! The core of a compositor (resumed), without the protocol and the GPU';
    const { workspace: crate, runs: killed } = await setUp({
      models: [{ id: MODEL, toolUse: true }],
      script: [
        {
          reply: {
            toolCalls: [
              {
                name: 'edit_file',
                arguments: { path: 'src/lib.rs', old_text: OLD, new_text: NEW },
                id: 'call_edit',
              },
            ],
          },
        },
        FINISH,
      ],
    });
    // A read lease on the file (fcntl F_SETLEASE, which Node cannot take): the edit's open for
    // writing blocks in the kernel, the holder told, until the lease is given up. The process is
    // killed there, after tool_started and before a byte was written.
    const holder = execa(
      'python3',
      [
        '-c',
        [
          'import fcntl, os, signal, sys',
          'fd = os.open(sys.argv[1], os.O_RDONLY)',
          "signal.signal(signal.SIGIO, lambda *_: print('breaking', flush=True))",
          'fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)',
          "print('held', flush=True)",
          'sys.stdin.read()',
        ].join('\n'),
        join(crate, 'src/lib.rs'),
      ],
      { stdin: 'pipe', reject: false },
    );
    cleanups.push(async () => {
      holder.kill('SIGKILL');
      await holder;
    });
    let said = '';
    holder.stdout?.on('data', (chunk: Buffer) => {
      said += chunk.toString();
    });
    await vi.waitFor(() => expect(said).toContain('held'), PATIENCE);
    const runId = await killed.killWhen(['-s', 'rust', '--workspace', crate, 'Edit the crate doc'], () =>
      said.includes('breaking'),
    );
    holder.stdin?.end();
    await holder;
    const killedLog = await killed.events(runId);
    expect(killedLog.at(-1)).toMatchObject({
      kind: 'tool_started',
      call_id: 'call_edit',
      effect: 'transform',
    });
    expect(await readFile(join(crate, 'src/lib.rs'), 'utf8')).toContain(OLD);

    const log = await resumed(killed, runId);
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      in_flight: [{ call_id: 'call_edit', tool: 'edit_file', effect: 'transform', action: 'rerun' }],
      drift: [],
    });
    const source = await readFile(join(crate, 'src/lib.rs'), 'utf8');
    expect(source.split(NEW)).toHaveLength(2);
    expect(source).not.toContain(OLD);
    expect(log.filter((event) => event.kind === 'tool_result' && event.call_id === 'call_edit')).toHaveLength(
      1,
    );
    expect(
      log.filter((event) => event.kind === 'tool_started' && event.call_id === 'call_edit'),
    ).toHaveLength(2);
  });
});
