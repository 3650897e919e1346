import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, runFabricInProcess } from '../../support/fabric-cli.ts';

const CONFIG = {
  policy: { rules: [{ tool: 'write_file', path: 'vendor/**', decision: 'deny' }] },
  specialists: {
    rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['ls', 'cargo check'] } },
    research: { builder: 'builtin:research', mcp_servers: { docs: { command: 'never-started' } } },
  },
};

describe('fabric policy check: only a call a run could make gets a decision (SPEC §19)', () => {
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await sandbox?.cleanup();
    sandbox = undefined;
  });

  async function check(args: string[]) {
    sandbox ??= await makeSandbox(CONFIG);
    return runFabricInProcess(['policy', 'check', '--config', sandbox.configPath, ...args], {
      env: {},
      cwd: sandbox.dir,
    });
  }

  it('refuses a tool the specialist does not offer, listing those it does and the one meant', async () => {
    const unknown = await check(['-s', 'rust', '--tool', 'nosuchtool']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain(
      'Specialist rust offers no tool "nosuchtool": its tools are list_files, read_file, write_file, edit_file, search, shell, cargo_check.',
    );
    const typo = await check(['-s', 'rust', '--tool', 'red_file', '--path', 'a.rs']);
    expect(typo.stderr).toContain('Did you mean "read_file"?');
    // An MCP server's tools are known once it runs: its prefix is offered, the server not started.
    const research = await check(['-s', 'research', '--tool', 'web_serch']);
    expect(research.stderr).toContain(
      'its tools are web_search, fetch_url, mcp__docs__*. Did you mean "web_search"?',
    );
    expect((await check(['-s', 'research', '--tool', 'mcp__docs__lookup'])).exitCode).toBe(0);
    const noShell = await check(['-s', 'research', '--', 'ls']);
    expect(noShell.exitCode).toBe(2);
    expect(noShell.stderr).toContain('Specialist research offers no tool "shell"');
  });

  it('refuses an empty tool, path or program instead of deciding on it', async () => {
    const tool = await check(['-s', 'rust', '--tool', '', '--', 'ls']);
    expect(tool.exitCode).toBe(2);
    expect(tool.stderr).toContain('--tool needs the name of a tool');
    const path = await check(['-s', 'rust', '--tool', 'write_file', '--path', '']);
    expect(path.exitCode).toBe(2);
    expect(path.stderr).toContain('--path needs a path, relative to the workspace');
    const program = await check(['-s', 'rust', '--', '', 'x']);
    expect(program.exitCode).toBe(2);
    expect(program.stderr).toContain('The command after -- starts with an empty word');
  });

  it('says which flag goes with which tool when they conflict', async () => {
    const command = await check(['-s', 'rust', '--tool', 'write_file', '--', 'cargo', 'tree']);
    expect(command.exitCode).toBe(2);
    expect(command.stderr).toContain(
      'A command after -- goes with the shell tool only (--tool shell, the default with a command). write_file takes --path PATH instead.',
    );
    const noArgs = await check(['-s', 'rust', '--tool', 'cargo_check', '--', 'cargo', 'check']);
    expect(noArgs.stderr).toContain('cargo_check takes no command.');
    const shellPath = await check(['-s', 'rust', '--path', 'src/main.rs', '--', 'ls']);
    expect(shellPath.exitCode).toBe(2);
    expect(shellPath.stderr).toContain(
      '--path goes with a tool that takes a path (list_files, read_file, write_file, edit_file, search); the shell tool is decided by its command: put it after --.',
    );
    const noPath = await check(['-s', 'rust', '--tool', 'cargo_check', '--path', 'src']);
    expect(noPath.stderr).toContain('cargo_check takes no path.');
  });

  it('denies a path the file tools refuse, with their reason, and allows one inside the workspace', async () => {
    const json = async (args: string[]) =>
      JSON.parse((await check(['-s', 'rust', '--json', ...args])).stdout);
    expect(await json(['--tool', 'read_file', '--path', '/etc/shadow'])).toMatchObject({
      decision: 'deny',
      rule: null,
      sandbox_refusal: expect.stringContaining('/etc/shadow is outside the workspace'),
    });
    expect(await json(['--tool', 'write_file', '--path', '../../etc/passwd'])).toMatchObject({
      decision: 'deny',
      sandbox_refusal: expect.stringContaining('../../etc/passwd is outside the workspace'),
    });
    await mkdir(join(sandbox!.dir, 'src'));
    await symlink('/etc', join(sandbox!.dir, 'src', 'etc'));
    expect(await json(['--tool', 'read_file', '--path', 'src/etc/passwd'])).toMatchObject({
      decision: 'deny',
      sandbox_refusal: expect.stringContaining('symbolic link'),
    });
    expect(await json(['--tool', 'write_file', '--path', 'fabric.yaml'])).toMatchObject({
      decision: 'deny',
      sandbox_refusal: expect.stringContaining('config file'),
    });
    // A file still to be written, and a rule's own deny, are decided as before.
    expect(await json(['--tool', 'write_file', '--path', 'src/new.rs'])).toMatchObject({
      decision: 'allow',
      sandbox_refusal: null,
    });
    expect(await json(['--tool', 'write_file', '--path', 'vendor/x.rs'])).toMatchObject({
      decision: 'deny',
      rule: 'policy.rules[0]',
      sandbox_refusal: null,
    });
    const text = await check(['-s', 'rust', '--tool', 'read_file', '--path', '/etc/shadow']);
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toContain('deny: read_file on /etc/shadow is refused');
    expect(text.stdout).toContain(
      'the policy allows it, but the sandbox refuses it: /etc/shadow is outside the workspace.',
    );
  });
});
