import { parseCommandLine } from '../../domain/command-line.ts';
import { sandboxViolation } from './violation.ts';

/**
 * Splits one command string into argv the way a POSIX shell would for plain words and quotes,
 * but runs no shell: operators (`;`, `|`, `&&`, `>`, `$(...)`, backticks) and unbalanced quotes
 * are refused rather than passed through, so `cargo check; rm -rf /` cannot mean two commands.
 * The grammar is the domain's (`parseCommandLine`), which `policy.rules` commands are checked by.
 */
export function splitCommand(command: string): string[] {
  const parsed = parseCommandLine(command);
  if (parsed.ok) return parsed.argv;
  throw sandboxViolation(parsed.message, parsed.rule, parsed.requested);
}
