/**
 * The battery file (SPEC §12): tasks, models and checks, validated with valibot. Every problem
 * names the field and its line in the file; paths in the file are relative to the file.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, normalize, resolve } from 'node:path';
import * as v from 'valibot';
import { LineCounter, type Node as YamlNode, isNode, parseDocument } from 'yaml';
import { FabricError } from '../domain/errors.ts';
import { didYouMean } from '../domain/words.ts';
import { knownKeysAt } from './known-keys.ts';

const nonEmpty = v.pipe(v.string(), v.minLength(1));
const positiveInt = v.pipe(v.number(), v.integer(), v.minValue(1));

/** A path inside the cell's workspace: relative, never climbing out. */
const workspacePath = v.pipe(
  nonEmpty,
  v.check(
    (path) => !isAbsolute(path) && !normalize(path).split(/[\\/]/).includes('..'),
    'a path inside the workspace (relative, no "..")',
  ),
);

export const RUN_STATUSES = ['succeeded', 'failed', 'max_steps', 'cancelled'] as const;

const ExpectSchema = v.strictObject({
  /** The run's status, compared exactly. Default: succeeded. */
  status: v.optional(v.picklist(RUN_STATUSES), 'succeeded'),
  /** Commands that must exit 0 in the cell's workspace, through the specialist's sandbox. */
  commands: v.optional(v.array(nonEmpty), []),
  /** Files of the cell's workspace and a text each must contain. */
  files_contain: v.optional(v.record(workspacePath, v.string()), {}),
  /** A tool (or tools) the run must have called (SPEC §12.1). */
  tool_used: v.optional(v.union([nonEmpty, v.pipe(v.array(nonEmpty), v.minLength(1))])),
  /** A tool (or tools) the run must not have called. */
  tool_not_used: v.optional(v.union([nonEmpty, v.pipe(v.array(nonEmpty), v.minLength(1))])),
  /** The most steps the run may take. */
  max_steps: v.optional(positiveInt),
  /** The most seconds the run may take (from its start to its end). */
  max_seconds: v.optional(v.pipe(v.number(), v.minValue(0, 'a number of seconds, 0 or more'))),
  /** The most tokens (prompt and completion) the run may use. */
  max_tokens: v.optional(positiveInt),
});

const TaskSchema = v.strictObject({
  id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'an id of letters, digits, . _ -')),
  task: nonEmpty,
  expect: v.optional(ExpectSchema, {}),
});

export const BatteryFileSchema = v.strictObject({
  name: nonEmpty,
  specialist: nonEmpty,
  /** Copied fresh for every cell; default: the specialist's configured workspace. */
  workspace: v.optional(nonEmpty),
  /** Model ids or aliases, or `available`: every tool-capable model the backends have. */
  models: v.optional(v.union([v.literal('available'), v.pipe(v.array(nonEmpty), v.minLength(1))])),
  repeat: v.optional(positiveInt, 1),
  /** Per cell, overrides the specialist's max_steps. */
  max_steps: v.optional(positiveInt),
  tasks: v.pipe(v.array(TaskSchema), v.minLength(1)),
});

export type BatteryExpect = v.InferOutput<typeof ExpectSchema>;
export type BatteryTask = v.InferOutput<typeof TaskSchema>;

/** A battery file, validated, with its workspace resolved against the file's directory. */
export interface BatteryFile extends Omit<v.InferOutput<typeof BatteryFileSchema>, 'workspace'> {
  /** The file's absolute path. */
  readonly source: string;
  /** Absolute; undefined when the file names none (the specialist's own is used). */
  readonly workspace: string | undefined;
  /** The line of a field in the file (the nearest existing parent's for a missing one). */
  readonly lineOf: (path: readonly (string | number)[]) => number | undefined;
}

/** A problem found after parsing (against the config): `config_invalid` naming field and line. */
export function batteryProblems(
  file: BatteryFile,
  problems: readonly { readonly path: readonly (string | number)[]; readonly message: string }[],
): FabricError {
  return invalid(
    file.source,
    problems.map(({ path, message }) => {
      const line = file.lineOf(path);
      return `  - ${line === undefined ? '' : `line ${line}: `}${fieldPath(path)}: ${message}`;
    }),
  );
}

/** The specialists a battery may name: the config's, and which file they come from. */
export interface KnownSpecialists {
  readonly names: readonly string[];
  readonly source: string;
  /**
   * The file's checks against the config (its workspace, its commands), on the file's content as
   * it is, so their problems come with the schema's in one error; `add` takes a field's path and
   * what is wrong with it.
   */
  readonly check?: (
    raw: Readonly<Record<string, unknown>>,
    source: string,
    add: (path: readonly (string | number)[], message: string) => void,
  ) => void;
}

/**
 * Reads and validates a battery file; any problem is `config_invalid` (exit 2) naming field and
 * line. With `specialists`, a specialist the config lacks is reported with the file's other problems.
 */
export async function loadBatteryFile(path: string, specialists?: KnownSpecialists): Promise<BatteryFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new FabricError(
      'usage',
      `Cannot read the battery file ${path}${code === 'ENOENT' ? ': it does not exist' : ` (${code ?? String(error)})`}. Give the path of a battery YAML file.`,
      { cause: error },
    );
  }
  return parseBatteryFile(text, path, specialists);
}

/**
 * Validates a battery file's text; `source` is its absolute path. Every problem the file has is
 * reported at once, in the order of its lines (a duplicate id used to hide the rest).
 */
export function parseBatteryFile(text: string, source: string, specialists?: KnownSpecialists): BatteryFile {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true });
  const lineOf = (offset: number | undefined) =>
    offset === undefined ? undefined : lineCounter.linePos(offset).line;
  const [yamlError] = doc.errors;
  if (yamlError !== undefined) {
    // One error at a time, with its excerpt, as for fabric.yaml: a missing `]` makes the parser
    // report every line after it too, and only the first error is the one to fix.
    const [headline = '', ...excerpt] = yamlError.message.split('\n');
    const shown = excerpt.filter((line) => line.trim() !== '').map((line) => `      ${line}`);
    const more =
      doc.errors.length > 1 ? ` (the first of ${doc.errors.length} YAML errors; fix it and run again)` : '';
    const line = `  - line ${yamlError.linePos?.[0].line ?? '?'}: ${headline.replace(/:$/, '')}${more}`;
    throw invalid(source, [[shown.length > 0 ? `${line}:` : line, ...shown].join('\n')]);
  }
  const raw: unknown = doc.toJS();
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw invalid(source, ['  - (top level): expected a mapping with name, specialist, models and tasks']);
  }
  const nodeLine = (path: readonly (string | number)[]): number | undefined => {
    // A missing key has no node: name the line of the nearest thing that exists.
    for (let depth = path.length; depth >= 0; depth--) {
      const node: unknown = doc.getIn(path.slice(0, depth), true);
      if (isNode(node)) return lineOf((node as YamlNode).range?.[0]);
    }
    return undefined;
  };
  const problems: { line: number | undefined; text: string }[] = [];
  const add = (path: readonly (string | number)[], text: string) => {
    const line = nodeLine(path);
    problems.push({ line, text: `  - ${line === undefined ? '' : `line ${line}: `}${text}` });
  };
  const result = v.safeParse(BatteryFileSchema, raw);
  if (!result.success) {
    for (const issue of result.issues.slice(0, 10)) {
      const path = (issue.path ?? []).map((item) => item.key as string | number);
      add(path, describeIssue(issue, path));
    }
  }
  const { tasks, specialist } = raw as { tasks?: unknown; specialist?: unknown };
  const seen = new Map<string, number>();
  (Array.isArray(tasks) ? tasks : []).forEach((task: unknown, index) => {
    const id = task !== null && typeof task === 'object' ? (task as { id?: unknown }).id : undefined;
    if (typeof id !== 'string') return;
    const first = seen.get(id);
    if (first !== undefined)
      add(
        ['tasks', index, 'id'],
        `tasks[${index}].id: "${id}" is already the id of tasks[${first}]; task ids must be unique`,
      );
    else seen.set(id, index);
  });
  if (
    specialists !== undefined &&
    typeof specialist === 'string' &&
    !specialists.names.includes(specialist)
  ) {
    const known = specialists.names.join(', ') || '(none)';
    add(
      ['specialist'],
      `specialist: no specialist "${specialist}" in ${specialists.source} (configured: ${known}).${didYouMean(specialist, specialists.names)}`,
    );
  }
  specialists?.check?.(raw as Record<string, unknown>, source, (path, message) =>
    add(path, `${fieldPath(path)}: ${message}`),
  );
  if (!result.success || problems.length > 0) {
    const ordered = problems
      .map((problem, order) => ({ ...problem, order }))
      .sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || a.order - b.order);
    throw invalid(
      source,
      ordered.map((problem) => problem.text),
    );
  }
  const battery = result.output;
  return {
    ...battery,
    source,
    lineOf: nodeLine,
    workspace: battery.workspace === undefined ? undefined : resolve(dirname(source), battery.workspace),
  };
}

/** A field's path as the file's reader writes it: `tasks[0].expect.commands[1]`. */
export function fieldPath(path: readonly (string | number)[]): string {
  return path
    .map((key, i) => {
      if (typeof key === 'number') return `[${key}]`;
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return `[${JSON.stringify(key)}]`;
      return i === 0 ? key : `.${key}`;
    })
    .join('');
}

function describeIssue(issue: v.BaseIssue<unknown>, path: readonly (string | number)[]): string {
  const field = path.length === 0 ? '(top level)' : fieldPath(path);
  if (issue.kind === 'schema' && issue.expected === 'never') {
    const hint = didYouMean(String(path.at(-1) ?? ''), knownKeysAt(BatteryFileSchema, path.slice(0, -1)));
    return hint === ''
      ? `${field}: unknown key (remove it, or check its spelling)`
      : `${field}: unknown key.${hint}`;
  }
  if (issue.received === 'undefined') return `${field}: missing (required)`;
  if (issue.kind === 'validation' && issue.expected === null) return `${field}: expected ${issue.message}`;
  return `${field}: expected ${issue.expected ?? issue.message}, found ${issue.received}`;
}

function invalid(source: string, problems: readonly string[]): FabricError {
  return new FabricError(
    'config_invalid',
    `${source}: invalid battery file (nothing was run):\n${problems.join('\n')}`,
    { details: { problems } },
  );
}
