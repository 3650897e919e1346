import { describe, expect, it } from 'vitest';
import { decidePolicy, globMatches, type PolicyRule, rulesFor } from '../../src/domain/policy.ts';

const ALLOWLIST = [
  ['cargo', 'check'],
  ['cargo', 'test'],
];

function rules(own: PolicyRule[], top: PolicyRule[] = []) {
  return rulesFor('rust', own, top);
}

describe('policy rules (SPEC §19)', () => {
  it('decides deny over ask over allow whatever their order, and names the deciding rule', () => {
    const placed = rules(
      [{ tool: 'shell', command: 'cargo', decision: 'allow' }],
      [
        { tool: 'shell', command: 'cargo tree', decision: 'ask' },
        { tool: 'shell', command: 'cargo tree -i', decision: 'deny' },
      ],
    );
    expect(decidePolicy({ tool: 'shell', argv: ['cargo', 'tree', '-e', 'features'] }, placed)).toMatchObject({
      decision: 'ask',
      by: 'policy.rules[0] (shell "cargo tree": ask)',
    });
    expect(decidePolicy({ tool: 'shell', argv: ['cargo', 'tree', '-i', 'serde'] }, placed)).toMatchObject({
      decision: 'deny',
      by: 'policy.rules[1] (shell "cargo tree -i": deny)',
    });
    expect(decidePolicy({ tool: 'shell', argv: ['cargo', 'metadata'] }, placed)).toMatchObject({
      decision: 'allow',
      by: 'specialists.rust.policy.rules[0] (shell "cargo": allow)',
    });
  });

  it('matches a command on whole words of the argv, never on a string prefix', () => {
    const placed = rules([{ tool: 'shell', command: 'git log', decision: 'deny' }]);
    expect(decidePolicy({ tool: 'shell', argv: ['git', 'logx'] }, placed, [['git']]).decision).toBe('allow');
    expect(decidePolicy({ tool: 'shell', argv: ['git', 'log', '-p'] }, placed, [['git']]).decision).toBe(
      'deny',
    );
  });

  it('keeps the allowlist as the allow base and refuses a command nothing allows', () => {
    expect(decidePolicy({ tool: 'shell', argv: ['cargo', 'check', '-q'] }, [], ALLOWLIST)).toEqual({
      decision: 'allow',
      by: 'sandbox.allowed_commands "cargo check"',
    });
    const refused = decidePolicy({ tool: 'shell', argv: ['cargo', 'tree'] }, [], ALLOWLIST);
    expect(refused.decision).toBe('deny');
    expect(refused.by).toContain('no rule and no sandbox.allowed_commands entry allows it');
    // A rule overrides the allowlist both ways.
    const denied = rules([{ tool: 'shell', command: 'cargo test', decision: 'deny' }]);
    expect(decidePolicy({ tool: 'shell', argv: ['cargo', 'test'] }, denied, ALLOWLIST).decision).toBe('deny');
  });

  it('matches tools by glob and paths by glob, * within a folder and ** across', () => {
    const placed = rules([
      { tool: 'mcp__*', decision: 'ask' },
      { tool: 'write_file', path: 'Cargo.*', decision: 'deny' },
      { tool: '*_file', path: 'src/**/*.rs', decision: 'allow' },
      { tool: 'edit_file', path: 'src/*.toml', decision: 'deny' },
    ]);
    expect(decidePolicy({ tool: 'mcp__docs__search' }, placed).decision).toBe('ask');
    expect(decidePolicy({ tool: 'write_file', path: './Cargo.lock' }, placed).decision).toBe('deny');
    expect(decidePolicy({ tool: 'write_file', path: 'src/backend/damage.rs' }, placed).rule?.where).toBe(
      'specialists.rust.policy.rules[2]',
    );
    expect(decidePolicy({ tool: 'edit_file', path: 'src/a/b.toml' }, placed).rule).toBeUndefined();
    expect(decidePolicy({ tool: 'read_file', path: 'README.md' }, placed)).toMatchObject({
      decision: 'allow',
    });
    expect(globMatches('**/*.rs', 'main.rs', true)).toBe(true);
    expect(globMatches('src/*', 'src/a/b', true)).toBe(false);
    expect(globMatches('a.b', 'axb', true)).toBe(false);
  });
});
