import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SOURCE_CLI, type Sandbox, makeSandbox, runFabricInProcess } from '../../support/fabric-cli.ts';

describe('fabric completion', () => {
  let sandbox: Sandbox;
  let path: string;
  beforeEach(async () => {
    sandbox = await makeSandbox();
    // The scripts call `fabric` for specialist names: put one on PATH.
    const bin = join(sandbox.dir, 'bin');
    await mkdir(bin);
    await writeFile(join(bin, 'fabric'), `#!/bin/sh\nexec '${process.execPath}' '${SOURCE_CLI}' "$@"\n`);
    await chmod(join(bin, 'fabric'), 0o755);
    path = `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`;
  });
  afterEach(async () => {
    await sandbox.cleanup();
  });

  async function complete(words: string[]): Promise<string[]> {
    const script = (await runFabricInProcess(['completion', 'bash'], { env: {}, cwd: sandbox.dir })).stdout;
    await writeFile(join(sandbox.dir, 'fabric.bash'), script);
    const array = words.map((word) => `'${word}'`).join(' ');
    const result = await execa(
      'bash',
      [
        '-c',
        `source ./fabric.bash; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _fabric; echo "\${COMPREPLY[*]}"`,
      ],
      { cwd: sandbox.dir, env: { PATH: path, NO_COLOR: '1' }, extendEnv: false },
    );
    return result.stdout.split(' ').filter(Boolean);
  }

  it("completes commands, a command's flags and the configured specialists in bash", async () => {
    expect(await complete(['fabric', 'r'])).toEqual(['run', 'resume', 'replay', 'runs']);
    expect(await complete(['fabric', 'run', '--ev'])).toEqual(['--events']);
    expect(await complete(['fabric', 'run', '--events', ''])).toEqual(['jsonl']);
    expect(await complete(['fabric', 'run', '--specialist', 'u'])).toEqual(['units']);
  });

  it('prints zsh and fish scripts that name every command, and refuses another shell', async () => {
    const zsh = await runFabricInProcess(['completion', 'zsh'], { env: {}, cwd: sandbox.dir });
    expect(zsh.stdout).toMatch(/^#compdef fabric/);
    const fish = await runFabricInProcess(['completion', 'fish'], { env: {}, cwd: sandbox.dir });
    for (const command of ['run', 'init', 'mcp', 'completion'])
      expect(fish.stdout).toContain(`__fish_seen_subcommand_from ${command}'`);
    const other = await runFabricInProcess(['completion', 'tcsh'], { env: {}, cwd: sandbox.dir });
    expect(other.exitCode).toBe(2);
    expect(other.stderr).toContain('one of bash, zsh, fish');
  });
});
