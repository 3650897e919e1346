import { describe, expect, it } from 'vitest';
import {
  countDiagnostics,
  formatDiagnostics,
  parseCargoJson,
} from '../../../../src/infrastructure/packs/rust/diagnostics.ts';

function message(level: string, text: string, file = 'src/lib.rs', line = 3, code?: string): string {
  return JSON.stringify({
    reason: 'compiler-message',
    message: {
      level,
      message: text,
      code: code === undefined ? null : { code },
      spans: [
        {
          file_name: file,
          line_start: line,
          column_start: 5,
          is_primary: true,
          label: 'here',
          text: [{ text: '  let x = 1;' }],
        },
      ],
      children: [{ level: 'help', message: 'try this', spans: [] }],
    },
  });
}

describe('cargo diagnostics', () => {
  it('deduplicates the same message reached through two targets', () => {
    const stdout = [
      message('error', 'boom', 'src/a.rs', 1, 'E0001'),
      message('error', 'boom', 'src/a.rs', 1, 'E0001'),
    ].join('\n');
    expect(parseCargoJson(stdout).diagnostics).toHaveLength(1);
  });

  it('drops the summary lines and skips torn JSON', () => {
    const summary = JSON.stringify({
      reason: 'compiler-message',
      message: { level: 'error', message: 'aborting due to 1 previous error', spans: [] },
    });
    const report = parseCargoJson(
      `${message('warning', 'unused')}\n${summary}\n{"reason":"compiler-mess\n{"reason":"build-finished","success":false}`,
    );
    expect(report.diagnostics.map((diagnostic) => diagnostic.message)).toEqual(['unused']);
    expect(report.success).toBe(false);
  });

  it('lists errors before warnings and bounds the list', () => {
    const lines = Array.from({ length: 50 }, (_, index) =>
      message(index % 2 ? 'warning' : 'error', `m${index}`, 'src/lib.rs', index),
    );
    const { diagnostics } = parseCargoJson(lines.join('\n'));
    const text = formatDiagnostics(diagnostics, 10);
    expect(text.split('\n')[0]).toMatch(/^error src\/lib\.rs:0:5: m0 \(here\)$/);
    expect(text).toContain('… 40 more diagnostics not shown.');
    expect(countDiagnostics(diagnostics)).toBe('25 errors, 25 warnings');
  });
});
