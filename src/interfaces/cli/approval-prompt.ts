/**
 * The terminal's approval prompt (SPEC §19): the exact call, the rule that asks, the patterns a
 * grant could use with what each matches and does not, and one key to answer. Ctrl-C cancels the
 * run as always; an answer given elsewhere first (`fabric approvals answer`, HTTP, the viewer)
 * ends the prompt, and the run goes on with that one.
 */
import type { AnswerInput } from '../../application/approvals/approval-store.ts';
import type { ApprovalPrompt } from '../../application/run/call-approvals.ts';
import { type ApprovalRecord, describeCall } from '../../domain/approvals.ts';
import { showText } from '../../domain/show-argv.ts';
import type { OutputStream } from './io.ts';
import type { Style } from './style.ts';
import type { TerminalInput } from './terminal.ts';

const MAX_MESSAGE = 4000;

export function terminalApprovalPrompt(
  terminal: TerminalInput,
  out: OutputStream,
  style: Style,
  by: string | undefined,
): ApprovalPrompt {
  return async (record, signal) => {
    out.write(describe(record, style));
    for (;;) {
      const key = await terminal.readKey(signal);
      if (key === undefined) return undefined;
      const answer = (fields: Omit<AnswerInput, 'channel' | 'by'>): AnswerInput => ({
        ...fields,
        channel: 'terminal',
        ...(by === undefined ? {} : { by }),
      });
      switch (key.toLowerCase()) {
        case '\x03':
          out.write('\n');
          terminal.interrupt();
          return undefined;
        case 'y':
          out.write('y: approved once\n');
          return answer({ decision: 'approve', scope: 'once' });
        case 'r':
        case 's': {
          const scope = key.toLowerCase() === 'r' ? 'run' : 'specialist';
          const pattern = await choosePattern(record, terminal, out, signal);
          if (pattern === undefined) return undefined;
          out.write(
            `${key}: approved for ${scope === 'run' ? 'this run' : `every run of ${record.specialist}`}: ${showText(record.proposals[pattern]?.label ?? '')}\n`,
          );
          return answer({ decision: 'approve', scope, pattern });
        }
        case 'n':
          out.write('n: denied\n');
          return answer({ decision: 'deny' });
        case 'm': {
          out.write('m: deny with a message to the model (Enter to send): ');
          const message = await readLine(terminal, out, signal);
          if (message === undefined) return undefined;
          return answer({ decision: 'deny', message });
        }
        default:
          out.write(style.dim('  keys: y, r, s, n or m (Ctrl-C cancels the run)\n'));
      }
    }
  };
}

function describe(record: ApprovalRecord, style: Style): string {
  const lines = [
    '',
    style.yellow(`? approval ${record.id}: ${describeCall(record)} needs your answer`),
    `  asked by ${record.rule}`,
    ...(record.expires_at === undefined
      ? []
      : [`  expires ${record.expires_at} (then it is not run; not a refusal)`]),
    // describeCall shell-quotes the argv; labels stored by an older fabric may still hold raw
    // control characters, so they are shown escaped too.
    ...record.proposals.map((pattern, index) =>
      showText(
        `  pattern ${index}: ${pattern.label} — matches ${pattern.matches}; not ${pattern.does_not_match}`,
      ),
    ),
    `  [y] approve once  [r] approve for this run  [s] approve for every ${record.specialist} run  [n] deny  [m] deny with a message`,
    style.dim('  (Ctrl-C cancels the run; fabric approvals answer from another terminal works too)'),
    '',
  ];
  return lines.join('\n');
}

async function choosePattern(
  record: ApprovalRecord,
  terminal: TerminalInput,
  out: OutputStream,
  signal: AbortSignal,
): Promise<number | undefined> {
  if (record.proposals.length <= 1) return 0;
  out.write(`  which pattern? 0-${record.proposals.length - 1} (Enter: 0, the exact call) `);
  for (;;) {
    const key = await terminal.readKey(signal);
    if (key === undefined) return undefined;
    if (key === '\x03') {
      out.write('\n');
      terminal.interrupt();
      return undefined;
    }
    if (key === '\r' || key === '\n') {
      out.write('0\n');
      return 0;
    }
    const index = Number(key);
    if (Number.isInteger(index) && index >= 0 && index < record.proposals.length) {
      out.write(`${index}\n`);
      return index;
    }
  }
}

/** A line typed in raw mode: echoed, Backspace works, Enter ends it, Ctrl-C cancels the run. */
async function readLine(
  terminal: TerminalInput,
  out: OutputStream,
  signal: AbortSignal,
): Promise<string | undefined> {
  let line = '';
  for (;;) {
    const key = await terminal.readKey(signal);
    if (key === undefined) return undefined;
    if (key === '\x03') {
      out.write('\n');
      terminal.interrupt();
      return undefined;
    }
    for (const char of key) {
      if (char === '\r' || char === '\n') {
        out.write('\n');
        return line;
      }
      if (char === '\x7f' || char === '\b') {
        if (line.length > 0) {
          line = line.slice(0, -1);
          out.write('\b \b');
        }
      } else if (char >= ' ' && line.length < MAX_MESSAGE) {
        line += char;
        out.write(char);
      }
    }
  }
}
