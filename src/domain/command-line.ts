/**
 * The grammar of the shell tool's command (SPEC §4.1): one command and its arguments, split into
 * argv the way a POSIX shell splits plain words and quotes, with no shell behind it. Pure, so
 * the sandbox that runs a command and the config that names one in `policy.rules` read it alike.
 */

/** Characters a shell would treat as operators; without a shell they would only confuse the model. */
const SHELL_OPERATORS = new Set([';', '|', '&', '>', '<', '`', '(', ')', '\n', '\r']);
const MAX_COMMAND_LENGTH = 8192;

/** A command split into argv, or why the shell tool refuses it. */
export type CommandLine =
  | { readonly ok: true; readonly argv: string[] }
  | {
      readonly ok: false;
      /** The sandbox rule a run records for the refusal. */
      readonly rule: 'nul_byte' | 'shell_syntax';
      readonly message: string;
      /** The command as a refusal may show it (shortened, never with a NUL byte). */
      readonly requested: string;
    };

/**
 * Splits one command string into argv; operators (`;`, `|`, `&&`, `>`, `$(...)`, backticks),
 * unbalanced quotes and an empty command are refused rather than passed through, so
 * `cargo check; rm -rf /` cannot mean two commands.
 */
export function parseCommandLine(command: string): CommandLine {
  if (command.includes('\0')) {
    return refuse('The command contains a NUL byte; send plain text.', 'nul_byte', '<contains NUL>');
  }
  if (command.length > MAX_COMMAND_LENGTH) {
    return refuse(
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
        return refuseSyntax(command, char === '`' ? '`' : '$(');
      } else current += char;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === '\\') {
      if (index + 1 >= command.length) return refuseSyntax(command, 'a trailing backslash');
      current += command[++index];
      inWord = true;
    } else if (char === ' ' || char === '\t') {
      if (inWord) argv.push(current);
      current = '';
      inWord = false;
    } else if (SHELL_OPERATORS.has(char) || (char === '$' && command[index + 1] === '(')) {
      return refuseSyntax(command, char === '\n' || char === '\r' ? 'a line break' : char);
    } else {
      current += char;
      inWord = true;
    }
  }
  if (quote !== undefined) return refuseSyntax(command, `an unterminated ${quote} quote`);
  if (inWord) argv.push(current);
  if (argv.length === 0)
    return refuse('The command is empty; name an allowed command.', 'shell_syntax', command);
  return { ok: true, argv };
}

function refuseSyntax(command: string, what: string): CommandLine {
  return refuse(
    `The command contains ${what}. Commands run without a shell: send exactly one command and its ` +
      'arguments, with no ;, |, &&, redirections, $(...) or backticks.',
    'shell_syntax',
    command,
  );
}

function refuse(message: string, rule: 'nul_byte' | 'shell_syntax', requested: string): CommandLine {
  return { ok: false, rule, message, requested };
}
