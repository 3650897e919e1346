import { sandboxViolation } from './violation.ts';

/** Characters a shell would treat as operators; without a shell they would only confuse the model. */
const SHELL_OPERATORS = new Set([';', '|', '&', '>', '<', '`', '(', ')', '\n', '\r']);
const MAX_COMMAND_LENGTH = 8192;

/**
 * Splits one command string into argv the way a POSIX shell would for plain words and quotes,
 * but runs no shell: operators (`;`, `|`, `&&`, `>`, `$(...)`, backticks) and unbalanced quotes
 * are refused rather than passed through, so `cargo check; rm -rf /` cannot mean two commands.
 */
export function splitCommand(command: string): string[] {
  if (command.includes('\0')) {
    throw sandboxViolation('The command contains a NUL byte; send plain text.', 'nul_byte', '<contains NUL>');
  }
  if (command.length > MAX_COMMAND_LENGTH) {
    throw sandboxViolation(
      `The command is ${command.length} characters long; the limit is ${MAX_COMMAND_LENGTH}.`,
      'shell_syntax',
      `${command.slice(0, 200)}…`,
    );
  }
  const argv: string[] = [];
  let current = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let index = 0; index < command.length; index++) {
    const char = command[index]!;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else current += char;
      continue;
    }
    if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === '\\' && index + 1 < command.length && '"\\$`'.includes(command[index + 1]!)) {
        current += command[++index];
      } else if (char === '`' || (char === '$' && command[index + 1] === '(')) {
        throw refuseSyntax(command, char === '`' ? '`' : '$(');
      } else current += char;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === '\\') {
      if (index + 1 >= command.length) throw refuseSyntax(command, 'a trailing backslash');
      current += command[++index];
      inWord = true;
    } else if (char === ' ' || char === '\t') {
      if (inWord) argv.push(current);
      current = '';
      inWord = false;
    } else if (SHELL_OPERATORS.has(char) || (char === '$' && command[index + 1] === '(')) {
      throw refuseSyntax(command, char === '\n' || char === '\r' ? 'a line break' : char);
    } else {
      current += char;
      inWord = true;
    }
  }
  if (quote !== undefined) throw refuseSyntax(command, `an unterminated ${quote} quote`);
  if (inWord) argv.push(current);
  if (argv.length === 0) {
    throw sandboxViolation('The command is empty; name an allowed command.', 'shell_syntax', command);
  }
  return argv;
}

function refuseSyntax(command: string, what: string) {
  return sandboxViolation(
    `The command contains ${what}. Commands run without a shell: send exactly one command and its ` +
      'arguments, with no ;, |, &&, redirections, $(...) or backticks.',
    'shell_syntax',
    command,
  );
}
