/**
 * Approvals (SPEC §19, ADR 0017): a call a rule says `ask` about waits for a person's answer.
 * What an approval holds, the grants an answer may leave behind, and the broader patterns the
 * fabric (never the model) proposes for them, each with what it would and would not match.
 * Deterministic and free of I/O.
 */
import { COMMAND_TOOL, type PolicyRequest, globMatches } from './policy.ts';
import { showArgv, showText } from './show-argv.ts';

export type ApprovalState = 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled';
export type ApprovalDecision = 'approve' | 'deny';
/** `once`: this call; `run`: the rest of this run; `specialist`: every run of the specialist (until revoked or expired). */
export type GrantScope = 'once' | 'run' | 'specialist';
/** What waits for an answer: a terminal prompt (`wait`), the run stopped until then (`park`), or nobody. */
export type OnApproval = 'wait' | 'park' | 'deny' | 'fail';

export const GRANT_SCOPES: readonly GrantScope[] = ['once', 'run', 'specialist'];
export const ON_APPROVAL: readonly OnApproval[] = ['wait', 'park', 'deny', 'fail'];

/**
 * What a grant matches: a command (its words as a prefix, or the exact argv), a path glob, or
 * a tool (its exact arguments, or any).
 */
export interface GrantPattern {
  readonly tool: string;
  /** The command's words: the whole argv when `exact`, else a prefix. */
  readonly command?: readonly string[];
  readonly path?: string;
  /** The exact call only (the same argv, path or arguments). */
  readonly exact: boolean;
  /** The call's canonical arguments, for an exact pattern of a tool with neither argv nor path. */
  readonly arguments?: string;
  /** In words, e.g. `cargo tree <any arguments>`. */
  readonly label: string;
  /** What it would match and what not, as shown before the answer. */
  readonly matches: string;
  readonly does_not_match: string;
}

/** A person's answer, and through which channel it came. */
export interface ApprovalAnswer {
  readonly state: Exclude<ApprovalState, 'pending'>;
  readonly scope: GrantScope;
  /** Which proposed pattern a `run` or `specialist` grant uses (index into `proposals`). */
  readonly pattern: number;
  readonly message?: string;
  /** `terminal`, `cli`, `http`, `viewer`, `mcp`, `grant`, `timeout`, `on_approval`, `run`. */
  readonly channel: string;
  /** Who, where the channel knows (a user name, an MCP client). */
  readonly by?: string;
  readonly at: string;
  /** When a `specialist` grant ends, ISO time; absent: until revoked. */
  readonly grant_expires_at?: string;
}

/** One approval: what the person is asked, and (once given) the answer. */
export interface ApprovalRecord {
  readonly id: string;
  readonly run_id: string;
  readonly specialist: string;
  readonly step: number;
  readonly call_id: string;
  readonly tool: string;
  /** The exact argv of a command. */
  readonly argv?: readonly string[];
  readonly path?: string;
  /** The call's arguments as the model wrote them. */
  readonly arguments: string;
  /** The deciding rule in words. */
  readonly rule: string;
  readonly requested_at: string;
  /** When an unanswered approval expires (`approval_timeout_s`); absent: never. */
  readonly expires_at?: string;
  readonly proposals: readonly GrantPattern[];
  readonly state: ApprovalState;
  readonly answer?: ApprovalAnswer;
}

/** A standing permission left by a `run` or `specialist` answer. */
export interface Grant {
  readonly id: string;
  readonly scope: 'run' | 'specialist';
  readonly specialist: string;
  /** The run it holds for (`run` scope). */
  readonly run_id?: string;
  readonly pattern: GrantPattern;
  readonly approval_id: string;
  readonly created_at: string;
  readonly expires_at?: string;
  readonly revoked_at?: string;
}

/** What the policy asked about, with the call's raw arguments (an exact pattern compares them). */
export interface ApprovalSubject extends PolicyRequest {
  readonly arguments: string;
}

/** A subcommand-like word: `tree`, `add`, `log` (not a flag, a path or a URL). */
const SUBCOMMAND = /^[a-z][a-z0-9_-]*$/;

/**
 * The patterns a grant could use, narrowest first: the exact call always; for a command, its
 * program and subcommand with any arguments (`cargo add serde` → `cargo add <any arguments>`),
 * never the program alone (one `curl` approval must not allow curl everywhere); for a path, the
 * files of its folder and then the folder's tree; for any other tool, any arguments.
 */
export function proposePatterns(subject: ApprovalSubject): GrantPattern[] {
  const exactArguments = canonicalArguments(subject.arguments);
  if (subject.argv !== undefined && subject.argv.length > 0) {
    const argv = subject.argv;
    // Labels are read by the person who answers: quoted, with control characters visible.
    const shown = showArgv(argv);
    const patterns: GrantPattern[] = [
      {
        tool: subject.tool,
        command: argv,
        exact: true,
        label: shown,
        matches: `exactly \`${shown}\``,
        does_not_match: `\`${shown}\` with any other or further argument`,
      },
    ];
    if (argv.length >= 2 && SUBCOMMAND.test(argv[1]!)) {
      const prefix = argv.slice(0, 2);
      const words = showArgv(prefix);
      patterns.push({
        tool: subject.tool,
        command: prefix,
        exact: false,
        label: `${words} <any arguments>`,
        matches: `\`${words}\` with any arguments (e.g. \`${shown}\`)`,
        does_not_match: `any other \`${showArgv([argv[0]!])}\` subcommand (e.g. \`${showArgv([argv[0]!, otherSubcommand(argv[1]!)])}\`), and any other program`,
      });
    }
    return patterns;
  }
  if (subject.path !== undefined) {
    const path = subject.path.replaceAll('\\', '/').replace(/^(\.\/)+/, '');
    const slash = path.lastIndexOf('/');
    const folder = slash < 0 ? '' : path.slice(0, slash + 1);
    // The path as shown: a file name may hold control characters too.
    const [shownPath, shownFolder] = [showText(path), showText(folder)];
    const where = folder === '' ? 'the workspace root' : shownFolder;
    return [
      {
        tool: subject.tool,
        path,
        exact: true,
        label: `${subject.tool} ${shownPath}`,
        matches: `${subject.tool} on ${shownPath} only`,
        does_not_match: `any other file, even in ${where}`,
      },
      {
        tool: subject.tool,
        path: `${folder}*`,
        exact: false,
        label: `${subject.tool} ${shownFolder}*`,
        matches: `${subject.tool} on any file directly in ${where}`,
        does_not_match: `files in folders below ${where}, and files elsewhere`,
      },
      ...(folder === ''
        ? []
        : [
            {
              tool: subject.tool,
              path: `${folder}**`,
              exact: false,
              label: `${subject.tool} ${shownFolder}**`,
              matches: `${subject.tool} on any file under ${shownFolder}, at any depth`,
              does_not_match: `files outside ${shownFolder}`,
            },
          ]),
    ];
  }
  return [
    {
      tool: subject.tool,
      exact: true,
      arguments: exactArguments,
      label: `${subject.tool} with these arguments`,
      matches: `${subject.tool} called with exactly these arguments`,
      does_not_match: `${subject.tool} with any other arguments, and any other tool`,
    },
    {
      tool: subject.tool,
      exact: false,
      label: `${subject.tool} <any arguments>`,
      matches: `any call of ${subject.tool}`,
      does_not_match: 'any other tool',
    },
  ];
}

/** True when the pattern covers the call. */
export function patternCovers(pattern: GrantPattern, subject: ApprovalSubject): boolean {
  if (!globMatches(pattern.tool, subject.tool, false)) return false;
  if (pattern.command !== undefined) {
    const argv = subject.argv;
    if (argv === undefined) return false;
    if (pattern.exact && argv.length !== pattern.command.length) return false;
    return pattern.command.length <= argv.length && pattern.command.every((word, i) => argv[i] === word);
  }
  if (pattern.path !== undefined) {
    if (subject.path === undefined) return false;
    const path = subject.path.replaceAll('\\', '/').replace(/^(\.\/)+/, '');
    return pattern.exact ? path === pattern.path : globMatches(pattern.path, path, true);
  }
  if (pattern.exact) return canonicalArguments(subject.arguments) === pattern.arguments;
  return true;
}

/** True when a grant holds now for this run of this specialist. */
export function grantHolds(grant: Grant, runId: string, specialist: string, now: Date): boolean {
  if (grant.revoked_at !== undefined) return false;
  if (grant.expires_at !== undefined && Date.parse(grant.expires_at) <= now.getTime()) return false;
  if (grant.specialist !== specialist) return false;
  return grant.scope === 'specialist' || grant.run_id === runId;
}

/** An approval's state now: a pending one past its expiry is `expired`, though nobody wrote it yet. */
export function stateAt(record: ApprovalRecord, now: Date): ApprovalState {
  if (record.state !== 'pending') return record.state;
  if (record.expires_at !== undefined && Date.parse(record.expires_at) <= now.getTime()) return 'expired';
  return 'pending';
}

/** What the model is told about an answered (or expired, or cancelled) approval it did not get to run. */
export function notRunText(record: ApprovalRecord, answer: ApprovalAnswer): string {
  const what = describeCall(record);
  const note =
    answer.message === undefined || answer.message.trim() === ''
      ? ''
      : ` Their message: ${answer.message.trim()}`;
  switch (answer.state) {
    case 'denied':
      return `Not run: a person denied ${what} (approval ${record.id}, through ${answer.channel}).${note} Do it another way, or do without it.`;
    case 'expired':
      return `Not run: ${what} needs a person's approval and nobody answered before it expired (approval ${record.id}). This is not a refusal; do without it for now, or say in finish_task that it is needed.`;
    case 'cancelled':
      return `Not run: the approval of ${what} was cancelled (approval ${record.id}).`;
    default:
      return `Approved: ${what}.${note}`;
  }
}

/**
 * `\`cargo tree -e features\``, or `this write_file call on src/a.rs`: the argv shell-quoted, so
 * a person reads the words the command gets, and nothing in it acts on a terminal.
 */
export function describeCall(record: Pick<ApprovalRecord, 'tool' | 'argv' | 'path'>): string {
  if (record.argv !== undefined) return `\`${showArgv(record.argv)}\``;
  if (record.path !== undefined) return `this ${record.tool} call on ${showText(record.path)}`;
  return `this ${record.tool} call`;
}

/** The call as a status line shows it, without backticks: the argv shell-quoted, else the tool and its path. */
export function callText(record: {
  readonly tool: string;
  readonly argv?: readonly string[] | undefined;
  readonly path?: string | undefined;
}): string {
  if (record.argv !== undefined) return showArgv(record.argv);
  return record.path === undefined ? record.tool : `${record.tool} ${showText(record.path)}`;
}

/** True for a tool whose argv the policy reads (the command tool). */
export function isCommandSubject(subject: Pick<ApprovalSubject, 'tool' | 'argv'>): boolean {
  return subject.tool === COMMAND_TOOL && subject.argv !== undefined;
}

/** JSON with sorted keys and no spacing: two writings of the same arguments compare equal. */
export function canonicalArguments(text: string): string {
  try {
    return JSON.stringify(sortKeys(text.trim() === '' ? {} : JSON.parse(text)));
  } catch {
    return text;
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value as Record<string, unknown>)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  return value;
}

/** A subcommand that is not this one, for "does not match" examples. */
function otherSubcommand(word: string): string {
  return word === 'install' ? 'publish' : 'install';
}
