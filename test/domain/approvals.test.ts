import { describe, expect, it } from 'vitest';
import {
  type ApprovalRecord,
  type Grant,
  canonicalArguments,
  grantHolds,
  notRunText,
  patternCovers,
  proposePatterns,
  stateAt,
} from '../../src/domain/approvals.ts';

const command = (argv: string[]) => ({
  tool: 'shell',
  argv,
  arguments: JSON.stringify({ command: argv.join(' ') }),
});

describe('proposed grant patterns (SPEC §19)', () => {
  it('offers the exact command, then its subcommand with any arguments, never the program alone', () => {
    const patterns = proposePatterns(command(['cargo', 'add', 'serde']));
    expect(patterns.map((pattern) => pattern.label)).toEqual([
      'cargo add serde',
      'cargo add <any arguments>',
    ]);
    const [exact, broader] = patterns;
    expect(patternCovers(exact!, command(['cargo', 'add', 'serde']))).toBe(true);
    expect(patternCovers(exact!, command(['cargo', 'add', 'serde', '--features', 'derive']))).toBe(false);
    expect(patternCovers(broader!, command(['cargo', 'add', 'tokio']))).toBe(true);
    expect(patternCovers(broader!, command(['cargo', 'install', 'ripgrep']))).toBe(false);
    expect(patternCovers(broader!, command(['cargo']))).toBe(false);
    expect(broader!.does_not_match).toContain('cargo install');
  });

  it('one curl approval never proposes curl everywhere: a URL is not a subcommand', () => {
    const patterns = proposePatterns(command(['curl', 'https://example.com/x']));
    expect(patterns.map((pattern) => pattern.label)).toEqual(['curl https://example.com/x']);
    expect(patternCovers(patterns[0]!, command(['curl', 'https://evil.example']))).toBe(false);
  });

  it('a path: the file, the files of its folder, the folder tree', () => {
    const subject = { tool: 'write_file', path: './src/backend/damage.rs', arguments: '{}' };
    const patterns = proposePatterns(subject);
    expect(patterns.map((pattern) => pattern.label)).toEqual([
      'write_file src/backend/damage.rs',
      'write_file src/backend/*',
      'write_file src/backend/**',
    ]);
    const other = { tool: 'write_file', path: 'src/backend/gl/mod.rs', arguments: '{}' };
    expect(patternCovers(patterns[1]!, other)).toBe(false);
    expect(patternCovers(patterns[2]!, other)).toBe(true);
    expect(patternCovers(patterns[2]!, { ...other, path: 'src/main.rs' })).toBe(false);
    expect(patternCovers(patterns[2]!, { ...other, tool: 'edit_file' })).toBe(false);
  });

  it('any other tool: these arguments (in any key order), or any', () => {
    const subject = { tool: 'mcp__gh__create_issue', arguments: '{"title":"a","body":"b"}' };
    const [exact, any] = proposePatterns(subject);
    expect(patternCovers(exact!, { ...subject, arguments: '{ "body": "b", "title": "a" }' })).toBe(true);
    expect(patternCovers(exact!, { ...subject, arguments: '{"title":"c"}' })).toBe(false);
    expect(patternCovers(any!, { ...subject, arguments: '{"title":"c"}' })).toBe(true);
    expect(canonicalArguments('not json')).toBe('not json');
  });
});

describe('grants and states', () => {
  const now = new Date('2026-11-28T12:00:00Z');
  const grant: Grant = {
    id: 'grt_1',
    scope: 'run',
    specialist: 'rust',
    run_id: 'run-a',
    pattern: proposePatterns(command(['cargo', 'tree']))[0]!,
    approval_id: 'apr_1',
    created_at: '2026-11-28T11:00:00Z',
  };

  it('a run grant holds for its run only; a specialist grant for every run until it expires or is revoked', () => {
    expect(grantHolds(grant, 'run-a', 'rust', now)).toBe(true);
    expect(grantHolds(grant, 'run-b', 'rust', now)).toBe(false);
    const lasting: Grant = { ...grant, scope: 'specialist', expires_at: '2026-11-28T13:00:00Z' };
    expect(grantHolds(lasting, 'run-b', 'rust', now)).toBe(true);
    expect(grantHolds(lasting, 'run-b', 'research', now)).toBe(false);
    expect(grantHolds(lasting, 'run-b', 'rust', new Date('2026-11-28T13:00:00Z'))).toBe(false);
    expect(grantHolds({ ...lasting, revoked_at: '2026-11-28T11:30:00Z' }, 'run-b', 'rust', now)).toBe(false);
  });

  it('an unanswered approval past its expiry is expired, and the model is told it is not a refusal', () => {
    const record: ApprovalRecord = {
      id: 'apr_1',
      run_id: 'run-a',
      specialist: 'rust',
      step: 1,
      call_id: 'c1',
      tool: 'shell',
      argv: ['cargo', 'tree'],
      arguments: '{}',
      rule: 'policy.rules[0]',
      requested_at: '2026-11-28T11:00:00Z',
      expires_at: '2026-11-28T11:59:59Z',
      proposals: [],
      state: 'pending',
    };
    expect(stateAt(record, now)).toBe('expired');
    const { expires_at: _never, ...forEver } = record;
    expect(stateAt(forEver, now)).toBe('pending');
    const text = notRunText(record, {
      state: 'expired',
      scope: 'once',
      pattern: 0,
      channel: 'timeout',
      at: '',
    });
    expect(text).toContain('nobody answered before it expired');
    expect(text).toContain('not a refusal');
  });
});
