/**
 * A valibot issue in words a person reads: the field, what it takes, what it got. Used where a
 * client sends data we validate (HTTP bodies); the config file keeps its own terse form.
 */
import * as v from 'valibot';

/** One problem of a value: the field (`max_steps`, `battery.tasks[0].id`), what it takes, what it got. */
export interface IssueFacts {
  readonly path: string;
  readonly expected: string;
  readonly found: string;
  /** A key the schema does not have (a typo, often): the caller may suggest the closest one. */
  readonly unknownKey: boolean;
}

/** The facts of one valibot issue, worded for a reader. */
export function issueFacts(issue: v.BaseIssue<unknown>, knownKeys: readonly string[] = []): IssueFacts {
  const path = v.getDotPath(issue) ?? '';
  if (issue.kind === 'schema' && issue.expected === 'never') {
    const expected = knownKeys.length === 0 ? 'a known key' : `a known key (${orList(knownKeys)})`;
    return { path, expected, found: 'an unknown key', unknownKey: true };
  }
  if (issue.received === 'undefined') {
    return { path, expected: 'a value (it is required)', found: 'nothing', unknownKey: false };
  }
  return { path, expected: expectedOf(issue), found: describeValue(issue.input), unknownKey: false };
}

/** A value as the message shows it: strings and numbers as JSON, containers by kind. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty list' : 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string')
    return value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}…` : JSON.stringify(value);
  return String(value);
}

const TYPE_WORDS: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  Object: 'a JSON object',
  Array: 'a list',
};

function expectedOf(issue: v.BaseIssue<unknown>): string {
  const requirement = (issue as { requirement?: unknown }).requirement;
  switch (issue.type) {
    case 'min_length':
      return Array.isArray(issue.input)
        ? `a list of at least ${requirement} ${requirement === 1 ? 'item' : 'items'}`
        : 'a non-empty string';
    case 'max_length':
      return `at most ${requirement} characters`;
    case 'min_value':
      return `a number of at least ${requirement}`;
    case 'max_value':
      return `a number of at most ${requirement}`;
    case 'integer':
      return 'a whole number';
  }
  // Our own wording (`v.check(..., 'must be an absolute path on the server')`) says it best.
  if (/^must (be )?/.test(issue.message)) return issue.message.replace(/^must (be )?/, '');
  if (issue.expected !== null && TYPE_WORDS[issue.expected] !== undefined) return TYPE_WORDS[issue.expected]!;
  return issue.expected ?? issue.message;
}

/** `a, b or c`. */
function orList(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}
