import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { exampleCrate, runRust } from '../../support/rust-run.ts';

const MODEL = 'qwen/qwen3-coder-30b';

/** Top-level rules, and the rust specialist's own in front of them. */
const POLICY = {
  policy: {
    rules: [
      { tool: 'shell', command: 'cargo tree', decision: 'allow' },
      { tool: 'shell', command: 'cargo metadata', decision: 'ask' },
    ],
  },
  specialists: {
    rust: {
      builder: 'builtin:rust',
      sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 },
      policy: {
        rules: [
          { tool: 'write_file', path: 'src/**', decision: 'deny' },
          { tool: 'shell', command: 'cargo tree --invert', decision: 'deny' },
        ],
      },
    },
  },
};

function shell(command: string) {
  return { reply: { toolCalls: [{ name: 'shell', arguments: { command } }] } };
}

/** The text of the last message of a recorded chat request: the tool result the model read. */
function lastMessage(body: unknown): string {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  return JSON.stringify(messages.at(-1)?.content);
}

describe('policy.rules (SPEC §19)', () => {
  let sandbox: Sandbox | undefined;
  let llm: FakeLlmServer | undefined;
  afterEach(async () => {
    await llm?.stop();
    await sandbox?.cleanup();
  });

  it('fabric policy check says what would happen and which rule decides', async () => {
    sandbox = await makeSandbox(POLICY);
    const check = (args: string[]) =>
      runFabricInProcess(['policy', 'check', '--config', sandbox!.configPath, '-s', 'rust', ...args], {
        env: {},
        cwd: sandbox!.dir,
      });
    const asked = await check(['--', 'cargo', 'metadata', '--no-deps']);
    expect(asked.exitCode).toBe(0);
    expect(asked.stdout).toBe(
      "ask: `cargo metadata --no-deps` waits for a person's approval for specialist rust\n" +
        '  decided by policy.rules[1] (shell "cargo metadata": ask)\n' +
        "  on_approval: the channel's default (a terminal waits with a prompt, no terminal denies, HTTP, MCP, the daemon and workers park the run)\n" +
        '  a person may grant:\n' +
        '    0: cargo metadata --no-deps — matches exactly `cargo metadata --no-deps`; not `cargo metadata --no-deps` with any other or further argument\n' +
        '    1: cargo metadata <any arguments> — matches `cargo metadata` with any arguments (e.g. `cargo metadata --no-deps`); not any other `cargo` subcommand (e.g. `cargo install`), and any other program\n',
    );
    const askedJson = JSON.parse((await check(['--json', '--', 'cargo', 'metadata'])).stdout);
    expect(askedJson).toMatchObject({ decision: 'ask', on_approval: null, grant: null });
    expect(askedJson.proposals.map((p: { label: string }) => p.label)).toEqual([
      'cargo metadata',
      'cargo metadata <any arguments>',
    ]);
    const denied = JSON.parse((await check(['--json', '--', 'cargo', 'tree', '--invert', 'x'])).stdout);
    expect(denied).toMatchObject({
      decision: 'deny',
      rule: 'specialists.rust.policy.rules[1]',
      argv: ['cargo', 'tree', '--invert', 'x'],
    });
    const allowed = JSON.parse((await check(['--json', '--', 'cargo', 'tree', '-e', 'features'])).stdout);
    expect(allowed).toMatchObject({ decision: 'allow', rule: 'policy.rules[0]', sandbox_refusal: null });
    const base = JSON.parse((await check(['--json', '--', 'cargo', 'check'])).stdout);
    expect(base).toMatchObject({
      decision: 'allow',
      rule: null,
      by: 'sandbox.allowed_commands "cargo check"',
    });
    const none = JSON.parse((await check(['--json', '--', 'git', 'log'])).stdout);
    expect(none.decision).toBe('deny');
    const path = JSON.parse((await check(['--json', '--tool', 'write_file', '--path', 'src/lib.rs'])).stdout);
    expect(path).toMatchObject({ decision: 'deny', rule: 'specialists.rust.policy.rules[0]' });
    const bare = await check(['--tool', 'shell']);
    expect(bare.exitCode).toBe(2);
    expect(bare.stderr).toContain('put it after --, e.g. `fabric policy check -- cargo tree`');
    // Allowed by a rule, refused by the sandbox's fixed rules all the same.
    await writeFile(
      sandbox.configPath,
      JSON.stringify({
        ...POLICY,
        policy: { rules: [{ tool: 'shell', command: 'cargo run', decision: 'allow' }] },
      }),
    );
    const fixed = await check(['--', 'cargo', 'run']);
    expect(fixed.stdout).toContain('deny: `cargo run` is refused');
    expect(fixed.stdout).toContain(
      'the policy allows it, but the sandbox refuses it: `cargo run` runs, installs',
    );
  });

  it('refuses a config whose rule cannot be applied, naming the rule and the fix', async () => {
    sandbox = await makeSandbox({
      policy: {
        rules: [
          { tool: 'shell', decision: 'allow' },
          { tool: 'write_file', command: 'cargo tree', decision: 'ask' },
          { tool: 'shell', command: 'cargo tree', decision: 'maybe' },
        ],
      },
    });
    const out = await runFabricInProcess(['policy', 'check', '--config', sandbox.configPath, '--', 'ls'], {
      env: {},
      cwd: sandbox.dir,
    });
    expect(out.exitCode).toBe(2);
    expect(out.stderr).toContain('policy.rules[0]: an allow rule for shell names the command it allows');
    expect(out.stderr).toContain('policy.rules[1]: a command prefix applies to the shell tool only');
    expect(out.stderr).toContain('policy.rules[2].decision: expected ("allow" | "ask" | "deny")');
  });

  it('a run obeys the rules: an allowed command runs in the sandbox, deny wins, ask without a terminal is refused', async () => {
    sandbox = await makeSandbox(POLICY);
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        shell('cargo tree -e features'),
        shell('cargo tree --invert compositor-core'),
        shell('cargo metadata --no-deps'),
        { reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'src/new.rs', content: '' } }] } },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked at the tree.' } }] } },
      ],
    });
    const { run, events } = await runRust(sandbox, workspace, testEnv(sandbox, llm.url), 'Show the tree');
    expect(run.status).toBe('succeeded');
    const read = llm.chatRequests().map((request) => lastMessage(request.body));
    // The command's real output, from cargo in the sandbox, is what the model reads next.
    expect(read[1]).toContain('compositor-core v0.1.0');
    expect(read[1]).toContain('exit code 0');
    expect(read[2]).toContain(
      'denied by the policy, specialists.rust.policy.rules[1] (shell \\"cargo tree --invert\\": deny)',
    );
    expect(read[3]).toContain("needs a person's approval (policy.rules[1]");
    expect(read[4]).toContain(
      'denied by the policy, specialists.rust.policy.rules[0] (write_file path src/**: deny)',
    );
    await expect(access(join(workspace, 'src/new.rs'))).rejects.toThrow();
    const refusals = events.flatMap((event) => (event.kind === 'security_event' ? [event] : []));
    expect(refusals.map((event) => [event.event_type, event.rule, event.resolved])).toEqual([
      ['policy', 'policy_deny', 'specialists.rust.policy.rules[1]'],
      ['policy', 'policy_deny', 'specialists.rust.policy.rules[0]'],
    ]);
    // Asked, and (no terminal: on_approval deny) refused at once, recorded as nobody's answer.
    const asked = events.filter(
      (event) => event.kind === 'approval_requested' || event.kind === 'approval_decided',
    );
    expect(asked).toMatchObject([
      { kind: 'approval_requested', argv: ['cargo', 'metadata', '--no-deps'], on_approval: 'deny' },
      { kind: 'approval_decided', state: 'denied', channel: 'on_approval' },
    ]);
  });
});
