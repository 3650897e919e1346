import { parseArgs } from 'node:util';
import { FabricError } from '../../domain/errors.ts';

type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;
/** Named so the build's declarations can say what `parseCommandArgs` returns. */
type ParsedArgs<T extends OptionSpec> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
>;

/** Parses a command's argv strictly; an unknown flag is a usage error that names the command's help. */
export function parseCommandArgs<T extends OptionSpec>(
  command: string,
  argv: readonly string[],
  options: T,
): ParsedArgs<T> {
  try {
    return parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^.*?: /, '') : String(error);
    throw new FabricError('usage', `${message}\nSee \`fabric ${command} --help\`.`);
  }
}

/** A positive integer flag, or a usage error. */
export function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new FabricError('usage', `${flag} takes a whole number of at least 1, not "${value}".`);
  return n;
}
