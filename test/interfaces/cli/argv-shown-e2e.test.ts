import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { exampleCrate, runRust } from '../../support/rust-run.ts';

/**
 * SPEC §19: a person deciding on a command reads its words exactly. A word's spaces, and the
 * control characters in it, must show; the raw argv stays in the JSON outputs.
 */
const MODEL = 'qwen/qwen3-coder-30b';

const CONFIG = {
  policy: {
    on_approval: 'park',
    rules: [{ tool: 'shell', command: 'cargo tree', decision: 'ask' }],
  },
  specialists: {
    rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
  },
};

/** Anything a terminal acts on or draws as nothing. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;

describe('argv shown to a person (SPEC §19)', () => {
  let sandbox: Sandbox | undefined;
  let llm: FakeLlmServer | undefined;
  afterEach(async () => {
    await llm?.stop();
    await sandbox?.cleanup();
  });

  it('fabric policy check tells one word with spaces from several words', async () => {
    sandbox = await makeSandbox(CONFIG);
    const firstLine = async (argv: string[]) => {
      const out = await runFabricInProcess(
        ['policy', 'check', '--config', sandbox!.configPath, '-s', 'rust', '--', ...argv],
        { env: {}, cwd: sandbox!.dir },
      );
      expect(out.exitCode).toBe(0);
      return out.stdout.split('\n')[0]!;
    };
    const oneWord = await firstLine(['cargo', 'tree', '-p', 'foo bar']);
    const twoWords = await firstLine(['cargo', 'tree', '-p', 'foo', 'bar']);
    const whole = await firstLine(['cargo tree -e features']);
    const three = await firstLine(['cargo', 'tree', '-e', 'features']);
    expect(oneWord).toContain("`cargo tree -p 'foo bar'`");
    expect(twoWords).toContain('`cargo tree -p foo bar`');
    expect(whole).toContain("`'cargo tree -e features'`");
    expect(three).toContain('`cargo tree -e features`');
    expect(new Set([oneWord, twoWords])).toHaveProperty('size', 2);
    expect(whole.replace(/^\w+: /, '')).not.toBe(three.replace(/^\w+: /, ''));
    const control = await runFabricInProcess(
      [
        'policy',
        'check',
        '--config',
        sandbox.configPath,
        '-s',
        'rust',
        '--',
        'cargo',
        'tree',
        '-i',
        'x\u001b[2K\ry',
      ],
      { env: {}, cwd: sandbox.dir },
    );
    expect(control.stdout).toContain("`cargo tree -i $'x\\e[2K\\ry'`");
    expect(control.stdout).not.toMatch(RAW_CONTROL);
  });

  it('fabric approvals list and fabric replay show ESC and CR in an asked argv escaped', async () => {
    sandbox = await makeSandbox(CONFIG);
    const workspace = await exampleCrate();
    // The probe's call: raw, the terminal would erase the line and show only the quoted part.
    const command = "cargo tree -i 'x\u001b[2K\r  `cargo tree --depth 1`' -e features";
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [{ reply: { toolCalls: [{ name: 'shell', arguments: { command } }] } }],
    });
    const env = testEnv(sandbox, llm.url);
    const parked = await runRust(sandbox, workspace, env, 'Show the tree');
    expect(parked.run.status).toBe('awaiting_approval');
    const argv = ['cargo', 'tree', '-i', 'x\u001b[2K\r  `cargo tree --depth 1`', '-e', 'features'];
    expect(parked.run.approval).toMatchObject({ argv });
    const fabric = (args: string[]) =>
      runFabricInProcess([...args, '--config', sandbox!.configPath], { env, cwd: sandbox!.dir });

    const listed = await fabric(['approvals', 'list']);
    expect(listed.exitCode).toBe(0);
    const shown = "cargo tree -i $'x\\e[2K\\r  `cargo tree --depth 1`' -e features";
    expect(listed.stdout).toContain(`  \`${shown}\`\n`);
    expect(listed.stdout).toContain(`pattern 0: ${shown} — matches exactly \`${shown}\``);
    expect(listed.stdout).not.toMatch(RAW_CONTROL);
    // JSON keeps the real words.
    const json = JSON.parse((await fabric(['approvals', 'list', '--json'])).stdout);
    expect(json[0]).toMatchObject({ argv });

    const replay = await fabric(['replay', parked.run.run_id]);
    expect(replay.exitCode).toBe(0);
    expect(replay.stdout).toContain(`asks: ${shown} (`);
    expect(replay.stdout).not.toMatch(RAW_CONTROL);
  });
});
