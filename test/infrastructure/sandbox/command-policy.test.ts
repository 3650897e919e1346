import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecialistPack } from '../../../src/application/ports.ts';
import { splitCommand } from '../../../src/infrastructure/sandbox/argv.ts';
import { call, expectRefusal, rustPack, tempDir } from '../packs/rust/helpers.ts';

let ws: string;
let cleanup: () => Promise<void>;
let pack: SpecialistPack;

beforeAll(async () => {
  const temp = await tempDir('fabric-policy-');
  cleanup = temp.cleanup;
  ws = path.join(temp.dir, 'ws');
  await mkdir(ws);
  // A generous allowlist: the policy must still refuse what reaches outside or runs code.
  pack = await rustPack(ws, {
    allowed_commands: [
      'cargo check',
      'cargo test',
      'cargo run',
      'cargo install',
      'cargo publish',
      'cargo login',
      'ls',
    ],
  });
});

afterAll(async () => {
  await pack.close();
  await cleanup();
});

describe('splitCommand', () => {
  it('splits words and quotes the way a shell would, without running one', () => {
    expect(splitCommand(`cargo test -- --exact 'a b' "c \\"d\\"" e\\ f`)).toEqual([
      'cargo',
      'test',
      '--',
      '--exact',
      'a b',
      'c "d"',
      'e f',
    ]);
  });

  it('keeps shell operators that are quoted as plain text', () => {
    expect(splitCommand(`cargo test "a;b|c"`)).toEqual(['cargo', 'test', 'a;b|c']);
  });
});

describe('the shell tool command policy', () => {
  it.each([
    ['cargo check; rm -rf /', 'a ; separator'],
    ['cargo check && touch pwned', 'an && chain'],
    ['cargo check | tee pwned', 'a pipe'],
    ['cargo check > pwned', 'a redirection'],
    ['cargo check $(touch pwned)', 'a command substitution'],
    ['cargo check `touch pwned`', 'backticks'],
    ['cargo check\ntouch pwned', 'a line break'],
    ["cargo check 'unterminated", 'an unterminated quote'],
    ['cargo check &', 'a background operator'],
  ])('refuses %j (%s) as shell syntax and runs nothing', async (command) => {
    await expectRefusal(call(pack, 'shell', { command }), 'shell_syntax');
    expect(existsSync(path.join(ws, 'pwned'))).toBe(false);
  });

  it('refuses a program that is not on the allowlist', async () => {
    const error = await expectRefusal(call(pack, 'shell', { command: 'rm -rf .' }), 'not_allowlisted');
    expect(error.message).toContain('cargo check');
  });

  it('refuses an allowlisted program with a subcommand that is not allowlisted', async () => {
    await expectRefusal(call(pack, 'shell', { command: 'cargo clippy' }), 'not_allowlisted');
    await expectRefusal(call(pack, 'shell', { command: 'cargo checkx' }), 'not_allowlisted');
  });

  it('refuses an environment assignment in front of the program', async () => {
    await expectRefusal(
      call(pack, 'shell', { command: 'RUSTC_WRAPPER=/tmp/x cargo check' }),
      'not_allowlisted',
    );
  });

  it.each(['/usr/bin/cargo check', './cargo check', '../bin/cargo check'])(
    'refuses the program path in %j',
    async (command) => {
      await expectRefusal(call(pack, 'shell', { command }), 'program_path');
    },
  );

  it.each([
    ['cargo check --config build.rustc-wrapper="/tmp/evil"', 'forbidden_flag'],
    ['cargo check --config=target.x86_64-unknown-linux-gnu.runner="sh"', 'forbidden_flag'],
    ['cargo check -Zunstable-options', 'forbidden_flag'],
    ['cargo check -Z build-std', 'forbidden_flag'],
    ['cargo check +nightly', 'forbidden_flag'],
    ['cargo +nightly check', 'not_allowlisted'],
    ['cargo --config x check', 'not_allowlisted'],
  ])('refuses %j, which loads configuration or another toolchain', async (command, rule) => {
    await expectRefusal(call(pack, 'shell', { command }), rule);
  });

  it.each([
    'cargo run',
    'cargo run --release',
    'cargo install ripgrep',
    'cargo publish',
    'cargo login token123',
  ])('refuses %j even when the allowlist names it', async (command) => {
    await expectRefusal(call(pack, 'shell', { command }), 'forbidden_subcommand');
  });

  it.each([
    'cargo check --manifest-path /tmp/other/Cargo.toml',
    'cargo check --manifest-path=../ws-evil/Cargo.toml',
    'cargo check --target-dir /tmp/fabric-out',
    'cargo check --target-dir=../out',
    'cargo test -- --logfile /tmp/fabric-log',
    'cargo test -- --logfile=../log',
    'cargo check ~/x',
    'ls /',
  ])('refuses %j, whose path argument points outside the workspace', async (command) => {
    await expectRefusal(call(pack, 'shell', { command }), 'path_argument_outside');
  });

  it('allows --manifest-path and --target-dir that stay inside the workspace', async () => {
    // Refused or not by the policy is the question; cargo failing on a missing manifest is fine.
    const outcome = await call(pack, 'shell', {
      command: 'cargo check --manifest-path ./Cargo.toml --target-dir target/x',
    }).then(
      () => undefined,
      (error: { securityEvent?: unknown }) => error.securityEvent,
    );
    expect(outcome).toBeUndefined();
  });
});

describe('an allowlist entry of bare `cargo`', () => {
  it('still finds the subcommand behind global options that take a value', async () => {
    const temp = await tempDir('fabric-policy-bare-');
    const bareWs = path.join(temp.dir, 'ws');
    await mkdir(bareWs);
    const bare = await rustPack(bareWs, { allowed_commands: ['cargo'] });
    try {
      await expectRefusal(
        call(bare, 'shell', { command: 'cargo --color always run' }),
        'forbidden_subcommand',
      );
      await expectRefusal(
        call(bare, 'shell', { command: 'cargo -v --color never install x' }),
        'forbidden_subcommand',
      );
    } finally {
      await bare.close();
      await temp.cleanup();
    }
  });
});
