/**
 * `POST /v1/batteries`: the battery file's content (a JSON object, or YAML or JSON text), where
 * its relative paths start from, and the command line's `--models` and `--concurrency`.
 */
import { isAbsolute, join } from 'node:path';
import process from 'node:process';
import * as v from 'valibot';
import { type BatteryFile, type KnownSpecialists, parseBatteryFile } from '../../config/battery-file.ts';
import { FabricError } from '../../domain/errors.ts';
import { ApiError, type ApiIssue } from './api-error.ts';
import { mismatch } from './bodies.ts';

const nonEmpty = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'));

export const StartBatteryBody = v.strictObject({
  /** The battery file: YAML (or JSON) text, or the same as a JSON object. */
  battery: v.union(
    [v.pipe(v.string(), v.minLength(1, 'must not be empty')), v.record(v.string(), v.unknown())],
    'must be the battery file as YAML text or as a JSON object',
  ),
  /** Relative paths in the battery (its workspace) start here; default: the server's working directory. */
  base_dir: v.optional(v.pipe(v.string(), v.check(isAbsolute, 'must be an absolute path on the server'))),
  /** Replaces the file's models, as `--models` does. */
  models: v.optional(
    v.union(
      [v.literal('available'), v.pipe(v.array(nonEmpty), v.minLength(1, 'must name a model'))],
      'must be a list of model ids, or "available"',
    ),
  ),
  concurrency: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64))),
});

export type StartBattery = v.InferOutput<typeof StartBatteryBody>;

/**
 * The battery of a request, validated as `fabric battery` validates a file; its problems are a
 * 400 `invalid_request` whose issues name the field under `battery` (and the line of the text).
 */
export function batteryOfBody(body: StartBattery, specialists?: KnownSpecialists): BatteryFile {
  const base = body.base_dir ?? process.cwd();
  const text = typeof body.battery === 'string' ? body.battery : JSON.stringify(body.battery, null, 2);
  // The battery's "file" sits in base_dir, so its relative paths resolve there. With the config's
  // specialists, an unknown one is reported with the file's other problems, not in a second round.
  return asIssues(() => parseBatteryFile(text, join(base, 'posted-battery.yaml'), specialists));
}

/** Runs `work`, turning a battery file's `config_invalid` into a 400 with one issue per problem. */
export function asIssues<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw batteryIssues(error);
  }
}

/** A battery's `config_invalid` (from parsing or from the check against the config) as a 400. */
export function batteryIssues(error: unknown): unknown {
  const problems = error instanceof FabricError ? error.details.problems : undefined;
  if (!(error instanceof FabricError) || error.code !== 'config_invalid' || !Array.isArray(problems))
    return error;
  const issues = problems.map((problem: string): ApiIssue => {
    // "  - line 7: tasks[1].id: "a" is already the id of tasks[0]"
    const match = /^\s*-\s*(?:line (\d+): )?(.*?): (.*)$/s.exec(problem);
    if (match === null) return { path: 'battery', message: `battery: ${problem.trim()}` };
    const [, line, field, text] = match;
    // Over HTTP there is no battery file: its relative paths start from base_dir.
    const said = text!.replace('relative to the battery file', 'relative to base_dir');
    const at = field === '(top level)' ? 'battery' : `battery.${field}`;
    const where = line === undefined ? '' : ` (line ${line})`;
    // The file's own wording of a mismatch: "expected X, found Y"; a missing key: "missing (required)".
    const form = /^expected (.+), found (.+)$/s.exec(said);
    if (form !== null) return mismatch(at, form[1]!, `${form[2]!}${where}`);
    if (said === 'missing (required)') return mismatch(at, 'a value (it is required)', `nothing${where}`);
    return { path: at, message: `${at}: ${said}${where}.` };
  });
  const summary = issues.map((issue) => issue.message).join(' ');
  return new ApiError('invalid_request', `Invalid battery (nothing was run): ${summary}`, {
    issues,
    cause: error,
  });
}
