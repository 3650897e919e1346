import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config/load.ts';
import { FabricError } from '../../src/domain/errors.ts';

/** The config error for `rules` given at the top level and to specialist `rust`. */
async function refusal(rules: unknown[], own: unknown[] = []): Promise<string> {
  const raw = {
    policy: { rules },
    specialists: { rust: { builder: 'builtin:rust', policy: { rules: own } } },
  };
  const error = await buildConfig(raw, '/cfg/fabric.yaml', {}, '/tmp').catch((e: unknown) => e);
  if (!(error instanceof FabricError)) throw new Error(`expected a FabricError, got ${String(error)}`);
  expect(error.code).toBe('config_invalid');
  return error.message;
}

describe('policy.rules in the config (SPEC §19)', () => {
  it('refuses a path rule for the shell tool, naming the rule and saying to match its command', async () => {
    const message = await refusal(
      [{ tool: 'shell', path: 'src/*', decision: 'ask' }],
      [{ tool: 'shell', path: 'a', decision: 'deny' }],
    );
    expect(message).toContain(
      '  - policy.rules[0]: a path never applies to the shell tool (its calls carry a command, not a path): ' +
        'match its command instead, e.g. command: "cargo tree"',
    );
    expect(message).toContain('  - specialists.rust.policy.rules[0]: a path never applies to the shell tool');
  });

  it('refuses a command the shell tool would refuse, with the shell tool’s own reason', async () => {
    const message = await refusal([
      { tool: 'shell', command: 'cargo tree; rm -rf /', decision: 'allow' },
      { tool: 'shell', command: 'cargo tree | sh', decision: 'deny' },
      { tool: 'shell', command: "cargo 'tree", decision: 'ask' },
    ]);
    expect(message).toContain(
      '  - policy.rules[0].command: the shell tool refuses this command, so the rule would never match: ' +
        'The command contains ;. Commands run without a shell',
    );
    expect(message).toContain('  - policy.rules[1].command: the shell tool refuses this command');
    expect(message).toContain(
      "policy.rules[2].command: the shell tool refuses this command, so the rule would never match: The command contains an unterminated ' quote",
    );
  });

  it('says what an empty or missing key takes, in the words of the other config errors', async () => {
    const message = await refusal([
      { tool: 'shell', command: '', decision: 'ask' },
      { command: 'cargo tree', decision: 'ask' },
      { tool: '', decision: 'deny' },
      { tool: 'write_file', path: '' },
    ]);
    expect(message).toContain('  - policy.rules[0].command: expected a non-empty string, found ""');
    expect(message).toContain('  - policy.rules[1].tool: missing; expected a non-empty string');
    expect(message).toContain('  - policy.rules[2].tool: expected a non-empty string, found ""');
    expect(message).toContain('  - policy.rules[3].path: expected a non-empty string, found ""');
    expect(message).toContain('  - policy.rules[3].decision: missing; expected "allow", "ask" or "deny"');
  });

  it('accepts rules a call can match: quoted words, a path for a file tool, a glob over every tool', async () => {
    const config = await buildConfig(
      {
        policy: {
          rules: [
            { tool: 'shell', command: "git commit -m 'a; b'", decision: 'ask' },
            { tool: 'write_file', path: 'src/**', decision: 'deny' },
            { tool: '*', path: '**/secret*', decision: 'deny' },
          ],
        },
        specialists: { rust: { builder: 'builtin:rust' } },
      },
      '/cfg/fabric.yaml',
      {},
      '/tmp',
    );
    expect(config.policy.rules).toHaveLength(3);
  });
});
