import { parseArgs } from 'node:util';
import { FabricError } from '../../domain/errors.ts';
import { didYouMean } from '../../domain/words.ts';

type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;
/** Named so the build's declarations can say what `parseCommandArgs` returns. */
type ParsedArgs<T extends OptionSpec> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
>;

/**
 * Parses a command's argv strictly. Every mistake is a usage error in our own words that names
 * the command's help: an unknown flag with the closest known one ("Did you mean --max-steps?"),
 * a flag missing its value, a value given to a switch. Node's own parseArgs messages are not
 * shown: they suggest nothing and quote the flag unevenly.
 */
export function parseCommandArgs<T extends OptionSpec>(
  command: string,
  argv: readonly string[],
  options: T,
): ParsedArgs<T> {
  const help = `(fabric ${command} --help)`;
  const problem = argvProblem(argv, options);
  if (problem !== undefined) throw new FabricError('usage', `${problem} ${help}`);
  try {
    return parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    // Not reached for the mistakes argvProblem knows; kept so a new parseArgs check still ends as a usage error.
    const message = error instanceof Error ? error.message.replace(/^.*?: /, '') : String(error);
    throw new FabricError('usage', `${message} ${help}`);
  }
}

/** What is wrong with `argv` for `options`, in one sentence, or undefined when nothing is. */
function argvProblem(argv: readonly string[], options: OptionSpec): string | undefined {
  const { tokens } = parseArgs({
    args: [...argv],
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (spec === undefined) {
      const known = Object.entries(options).flatMap(([name, { short }]) =>
        short === undefined ? [`--${name}`] : [`--${name}`, `-${short}`],
      );
      return `unknown option ${token.rawName}.${didYouMean(token.rawName, known, (flag) => flag)}`;
    }
    const flag = `--${token.name}`;
    if (spec.type === 'boolean' && token.value !== undefined)
      return `${flag} is a switch and takes no value (given "${token.value}"); write ${flag} alone.`;
    if (spec.type === 'string' && token.value === undefined)
      return `${token.rawName} needs a value: ${token.rawName} VALUE.`;
    if (
      spec.type === 'string' &&
      token.inlineValue === false &&
      (token.value?.length ?? 0) > 1 &&
      token.value?.startsWith('-')
    )
      return (
        `${token.rawName} needs a value, but is followed by "${token.value}". ` +
        `For a value that starts with a dash, write ${flag}=${token.value}.`
      );
  }
  return undefined;
}

/** A positive integer flag, or a usage error. */
export function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new FabricError('usage', `${flag} takes a whole number of at least 1, not "${value}".`);
  return n;
}
