import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { exampleCrate, runRust } from '../../support/rust-run.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { readFile } from 'node:fs/promises';

const MODEL = 'qwen/qwen3-coder-30b';

function policy(onApproval: string) {
  return {
    policy: {
      on_approval: onApproval,
      rules: [
        { tool: 'shell', command: 'cargo tree', decision: 'ask' },
        { tool: 'shell', command: 'cargo tree --invert', decision: 'deny' },
      ],
    },
    specialists: {
      rust: {
        builder: 'builtin:rust',
        sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 },
      },
    },
  };
}

function shell(command: string) {
  return { reply: { toolCalls: [{ name: 'shell', arguments: { command } }] } };
}

const FINISH = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked at the tree.' } }] },
};

function lastMessage(body: unknown): string {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  return String(messages.at(-1)?.content);
}

async function events(runlog: string): Promise<RunEvent[]> {
  return parseRunlog(await readFile(runlog, 'utf8'), runlog).events;
}

describe('approvals (SPEC §19) through the CLI', () => {
  let sandbox: Sandbox | undefined;
  let llm: FakeLlmServer | undefined;
  afterEach(async () => {
    await llm?.stop();
    await sandbox?.cleanup();
  });

  const fabric = (args: string[]) =>
    runFabricInProcess([...args, '--config', sandbox!.configPath], {
      env: testEnv(sandbox!, llm!.url),
      cwd: sandbox!.dir,
    });

  it('parks on an ask rule, refuses to resume until answered, and runs the approved command in the sandbox', async () => {
    sandbox = await makeSandbox(policy('park'));
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [shell('cargo tree -e features'), FINISH],
    });
    const parked = await runRust(sandbox, workspace, testEnv(sandbox, llm.url), 'Show the tree');
    expect(parked.exitCode).toBe(5);
    expect(parked.run.status).toBe('awaiting_approval');
    const id = parked.run.approval!.id;
    expect(parked.run.approval).toMatchObject({ tool: 'shell', argv: ['cargo', 'tree', '-e', 'features'] });
    // Parked: the one model request was made, nothing more is held or asked.
    expect(llm.chatRequests()).toHaveLength(1);
    const requested = parked.events.find((event) => event.kind === 'approval_requested');
    expect(requested).toMatchObject({
      approval_id: id,
      argv: ['cargo', 'tree', '-e', 'features'],
      on_approval: 'park',
      rule: 'policy.rules[0] (shell "cargo tree": ask)',
    });
    expect(parked.events.some((event) => event.kind === 'tool_started')).toBe(false);

    const listed = await fabric(['approvals', 'list']);
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).toContain('`cargo tree -e features`');
    expect(listed.stdout).toContain('pattern 1: cargo tree <any arguments>');

    const early = await fabric(['resume', parked.run.run_id]);
    expect(early.exitCode).toBe(2);
    expect(early.stderr).toContain(`it waits for approval ${id}`);

    const answer = await fabric(['approvals', 'answer', id, 'approve', '--message', 'only the tree, please']);
    expect(answer.exitCode).toBe(0);
    expect(answer.stdout).toContain(`${id} approved`);
    expect(answer.stdout).toContain(`fabric resume ${parked.run.run_id}`);
    const again = await fabric(['approvals', 'answer', id, 'deny']);
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toContain('already has its answer (approved through cli');

    const resumed = await fabric(['resume', parked.run.run_id, '--json']);
    expect(resumed.exitCode).toBe(0);
    expect((JSON.parse(resumed.stdout) as RunResult).status).toBe('succeeded');
    const read = lastMessage(llm.chatRequests()[1]!.body);
    // The command's real output, from cargo in the sandbox, and the person's message.
    expect(read).toContain('compositor-core v0.1.0');
    expect(read).toContain('exit code 0');
    expect(read).toContain('their message: only the tree, please');
    const all = await events(parked.run.runlog);
    expect(all.find((event) => event.kind === 'approval_decided')).toMatchObject({
      approval_id: id,
      state: 'approved',
      channel: 'cli',
      scope: 'once',
    });
    // A replay answers the call as the person did, and runs cargo again; it asks nobody.
    const replay = await fabric(['replay', parked.run.run_id, '--execute', '--json']);
    expect(replay.exitCode, replay.stdout).toBe(0);
    // The re-run's shell result is the run's: cargo ran again, approved as the person approved it.
    expect(JSON.parse(replay.stdout)).toMatchObject({ identical: true, compared: 2 });
    expect(JSON.parse((await fabric(['approvals', 'list', '--json'])).stdout)).toEqual([]);
  });

  it('a denial with a message reaches the model and the command never runs; deny wins over ask', async () => {
    sandbox = await makeSandbox(policy('park'));
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [shell('cargo tree --invert compositor-core'), shell('cargo tree'), FINISH],
    });
    const parked = await runRust(sandbox, workspace, testEnv(sandbox, llm.url), 'Show the tree');
    expect(parked.run.status).toBe('awaiting_approval');
    // The deny rule decided the first call without asking anyone.
    expect(parked.events.filter((event) => event.kind === 'approval_requested')).toHaveLength(1);
    expect(lastMessage(llm.chatRequests()[1]!.body)).toContain('denied by the policy');
    const id = parked.run.approval!.id;
    expect(
      (await fabric(['approvals', 'answer', id, 'deny', '--message', 'the bug is in damage.rs'])).exitCode,
    ).toBe(0);
    const resumed = await fabric(['resume', parked.run.run_id, '--json']);
    expect((JSON.parse(resumed.stdout) as RunResult).status).toBe('succeeded');
    const read = lastMessage(llm.chatRequests()[2]!.body);
    expect(read).toContain('Not run: a person denied `cargo tree`');
    expect(read).toContain('the bug is in damage.rs');
    const all = await events(parked.run.runlog);
    expect(all.some((event) => event.kind === 'tool_started' || event.kind === 'tool_result')).toBe(false);
    expect(all.find((event) => event.kind === 'approval_decided')).toMatchObject({
      state: 'denied',
      channel: 'cli',
    });
  });

  it('a run grant covers the same command later in the run; a specialist grant the next run; revoke ends it', async () => {
    sandbox = await makeSandbox(policy('park'));
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        shell('cargo tree -e features'),
        shell('cargo tree --depth 1'),
        FINISH,
        shell('cargo tree -e normal'),
        FINISH,
      ],
    });
    const parked = await runRust(sandbox, workspace, testEnv(sandbox, llm.url), 'Show the tree');
    const id = parked.run.approval!.id;
    const bad = await fabric(['approvals', 'answer', id, 'approve', '--pattern', '7', '--scope', 'run']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('0 = cargo tree -e features; 1 = cargo tree <any arguments>');
    expect(
      (await fabric(['approvals', 'answer', id, 'approve', '--scope', 'specialist', '--pattern', '1']))
        .exitCode,
    ).toBe(0);
    const resumed = await fabric(['resume', parked.run.run_id, '--json']);
    expect((JSON.parse(resumed.stdout) as RunResult).status).toBe('succeeded');
    const all = await events(parked.run.runlog);
    expect(
      all
        .filter((event) => event.kind === 'approval_decided')
        .map((event) => (event as { channel: string }).channel),
    ).toEqual(['cli', 'grant']);
    const grants = JSON.parse((await fabric(['approvals', 'list', '--grants', '--json'])).stdout) as {
      id: string;
    }[];
    expect(grants).toHaveLength(1);
    const covered = await fabric(['policy', 'check', '-s', 'rust', '--', 'cargo', 'tree', '-e', 'normal']);
    expect(covered.stdout).toContain(
      `covered now by grant ${grants[0]!.id} (cargo tree <any arguments>, until revoked)`,
    );
    // The next run of the specialist: covered, nobody asked.
    const next = await runRust(sandbox, workspace, testEnv(sandbox, llm.url), 'Again');
    expect(next.run.status).toBe('succeeded');
    expect(next.events.some((event) => event.kind === 'approval_requested')).toBe(false);
    expect((await fabric(['approvals', 'revoke', grants[0]!.id])).exitCode).toBe(0);
    expect(JSON.parse((await fabric(['approvals', 'list', '--grants', '--json'])).stdout)).toHaveLength(0);
    expect(await readdir(join(sandbox.dir, 'runs', '.approvals', 'grants'))).toContain(
      `${grants[0]!.id}.revoked.json`,
    );
  });

  it('on_approval deny tells the model at once; fail ends the run with approval_required', async () => {
    sandbox = await makeSandbox(policy('deny'));
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [shell('cargo tree'), FINISH, shell('cargo tree')],
    });
    const denied = await runRust(sandbox, workspace, testEnv(sandbox, llm.url), 'Show the tree');
    expect(denied.run.status).toBe('succeeded');
    expect(lastMessage(llm.chatRequests()[1]!.body)).toContain('nobody can be asked in this run');
    expect(denied.events.find((event) => event.kind === 'approval_decided')).toMatchObject({
      state: 'denied',
      channel: 'on_approval',
    });
    const failed = await runRust(sandbox, workspace, testEnv(sandbox, llm.url), 'Show the tree', [
      '--on-approval',
      'fail',
    ]);
    expect(failed.exitCode).toBe(1);
    expect(failed.run.error?.code).toBe('approval_required');
  });
});
