/** One compiler message, reduced to what the model needs to act on it. */
export interface Diagnostic {
  readonly level: string;
  readonly code: string | undefined;
  /** `file:line:column` of the primary span, when there is one. */
  readonly location: string | undefined;
  readonly message: string;
  /** The primary span's label (`expected u32, found &str`). */
  readonly label: string | undefined;
  /** The source line of the primary span, trimmed. */
  readonly source: string | undefined;
  /** The first `help:` the compiler offered. */
  readonly help: string | undefined;
}

/** What `cargo check --message-format=json` said, parsed. */
export interface CargoReport {
  readonly diagnostics: readonly Diagnostic[];
  /** From cargo's `build-finished` line; undefined when cargo stopped before it. */
  readonly success: boolean | undefined;
}

interface RawSpan {
  file_name?: string;
  line_start?: number;
  column_start?: number;
  is_primary?: boolean;
  label?: string | null;
  text?: { text?: string }[];
}

interface RawMessage {
  level?: string;
  message?: string;
  code?: { code?: string } | null;
  spans?: RawSpan[];
  children?: RawMessage[];
}

/** Summaries rustc emits as diagnostics of their own; they repeat what the count already says. */
const NOISE =
  /^(aborting due to|\d+ warnings? emitted|some errors have detailed explanations|for more information about this error|\d+ warnings? generated)/;

/**
 * Parses cargo's JSON lines into deduplicated diagnostics (the same error reached through two
 * targets is one). Lines that are not JSON (a torn line at an output cap) are skipped.
 */
export function parseCargoJson(stdout: string): CargoReport {
  const seen = new Set<string>();
  const diagnostics: Diagnostic[] = [];
  let success: boolean | undefined;
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    let parsed: { reason?: string; success?: boolean; message?: RawMessage };
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    if (parsed.reason === 'build-finished') success = parsed.success === true;
    if (parsed.reason !== 'compiler-message' || parsed.message === undefined) continue;
    const diagnostic = toDiagnostic(parsed.message);
    if (diagnostic === undefined) continue;
    const key = [diagnostic.level, diagnostic.code, diagnostic.location, diagnostic.message].join('|');
    if (seen.has(key)) continue;
    seen.add(key);
    diagnostics.push(diagnostic);
  }
  return { diagnostics, success };
}

function toDiagnostic(message: RawMessage): Diagnostic | undefined {
  const text = message.message ?? '';
  const spans = message.spans ?? [];
  if (spans.length === 0 && NOISE.test(text)) return undefined;
  const primary = spans.find((span) => span.is_primary) ?? spans[0];
  const help = message.children?.find((child) => child.level === 'help' && child.message)?.message;
  return {
    level: message.level ?? 'error',
    code: message.code?.code ?? undefined,
    location:
      primary?.file_name === undefined
        ? undefined
        : `${primary.file_name}:${primary.line_start ?? '?'}:${primary.column_start ?? '?'}`,
    message: text,
    label: primary?.label ?? undefined,
    source: primary?.text?.[0]?.text?.trim() || undefined,
    help,
  };
}

/**
 * Formats diagnostics compactly, errors first, bounded in count and length:
 * `error[E0308] src/lib.rs:3:18: mismatched types (expected u32, found &str)` plus the source line.
 */
export function formatDiagnostics(diagnostics: readonly Diagnostic[], maxItems = 30): string {
  const ordered = [...diagnostics].sort((a, b) => rank(a.level) - rank(b.level));
  const lines = ordered.slice(0, maxItems).map((diagnostic) => {
    const head = `${diagnostic.level}${diagnostic.code === undefined ? '' : `[${diagnostic.code}]`}`;
    const where = diagnostic.location === undefined ? '' : ` ${diagnostic.location}`;
    const label = diagnostic.label ? ` (${clip(diagnostic.label, 160)})` : '';
    let entry = `${head}${where}: ${clip(diagnostic.message, 300)}${label}`;
    if (diagnostic.source !== undefined) entry += `\n    | ${clip(diagnostic.source, 200)}`;
    if (diagnostic.help !== undefined) entry += `\n    help: ${clip(diagnostic.help, 200)}`;
    return entry;
  });
  if (ordered.length > maxItems) lines.push(`… ${ordered.length - maxItems} more diagnostics not shown.`);
  return lines.join('\n');
}

/** `2 errors, 1 warning`. */
export function countDiagnostics(diagnostics: readonly Diagnostic[]): string {
  const errors = diagnostics.filter((diagnostic) => rank(diagnostic.level) === 0).length;
  const warnings = diagnostics.filter((diagnostic) => diagnostic.level === 'warning').length;
  return `${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`;
}

function rank(level: string): number {
  // `error: internal compiler error` is an error too.
  if (level.startsWith('error')) return 0;
  return level === 'warning' ? 1 : 2;
}

function clip(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine;
}
