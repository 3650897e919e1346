import { access, cp } from 'node:fs/promises';
import { join } from 'node:path';
import { FabricError } from '../../../domain/errors.ts';
import { didYouMean } from '../../../domain/words.ts';
import { type CliIo, EXIT } from '../io.ts';

/** The examples the package ships (beside dist/ in an install, beside src/ in a clone). */
const EXAMPLES = new URL('../../../../examples/', import.meta.url);

/** What each example copies into the working directory: a directory and the files that go with it. */
const EXAMPLE_FILES: Readonly<Record<string, readonly string[]>> = {
  compositor: ['compositor', 'compositor-battery.yaml'],
};

/**
 * `fabric init --example compositor`: the README's daemon and battery walkthroughs need the
 * example crate (with its OpenSpec change) and its battery file as files of the user's own, which
 * an installed package keeps out of sight under its prefix; the copy is the user's to change.
 */
export async function initExample(io: CliIo, json: boolean, example: string): Promise<number> {
  const files = EXAMPLE_FILES[example];
  if (files === undefined) {
    throw new FabricError(
      'usage',
      `--example ${JSON.stringify(example)}: no such example.${didYouMean(example, Object.keys(EXAMPLE_FILES))} ` +
        `The examples: ${Object.keys(EXAMPLE_FILES).join(', ')}.`,
    );
  }
  const targets = files.map((file) => join(io.cwd, file));
  const existing = [];
  for (const target of targets) if (await exists(target)) existing.push(target);
  if (existing.length > 0) {
    throw new FabricError(
      'usage',
      `${existing.join(' and ')} already exist${existing.length === 1 ? 's' : ''}; nothing was written. ` +
        'Move it away, or run fabric init --example in another directory.',
    );
  }
  for (const [index, file] of files.entries()) {
    await cp(new URL(file, EXAMPLES), targets[index] ?? file, {
      recursive: true,
      // A clone may hold the example's build output; the copy starts clean.
      filter: (source) => !/[/\\]target(?:[/\\]|$)/.test(source.slice(EXAMPLES.pathname.length)),
    });
  }
  if (json) {
    io.stdout.write(`${JSON.stringify({ example, written: targets })}\n`);
    return EXIT.ok;
  }
  io.stdout.write(
    `Wrote ${files.map((file) => `./${file}`).join(' and ')}: a small Wayland compositor crate with an OpenSpec change, and a battery file for it. Try:\n\n` +
      '  fabric run --specialist rust --workspace compositor "Add Region::contains_point(x, y) and a unit test for it"\n' +
      '  fabric battery compositor-battery.yaml --report battery.md\n\n' +
      'The daemon commits, so give the crate a git repository of its own first (README, "The OpenSpec daemon").\n',
  );
  return EXIT.ok;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
