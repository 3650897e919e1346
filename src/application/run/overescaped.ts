/**
 * Code arguments escaped one level too many (research/local-model-quirks-2.md Q4): qwen2.5 on
 * Ollama, among others, writes `"content":"class Calculator:\\n\\tdef add…"`, so the decoded text
 * holds a backslash and an `n` where each line break belongs and the file would be one line of
 * escapes. Only the fields a tool's schema declares as file content are looked at (a string
 * property with `contentMediaType` and no `contentEncoding`, docs/packs.md). Never repaired: the
 * model is asked for real line breaks. Pure.
 */
import type { JsonSchema } from '../../domain/messages.ts';

/** A file-content field that arrived over-escaped: its name, its text and how many escapes. */
export interface Overescaped {
  readonly field: string;
  readonly text: string;
  readonly escapes: number;
}

/**
 * A literal `\n`, `\r` or `\t` right after what ends a line of code (`:`, `{`, `;`, `)`, a
 * bracket or a comma), not closing a string literal (`"a:\n"` is a string in one-line code).
 */
const ESCAPE_AFTER_CODE = /[:{}();,[\]][ \t]*\\[nrt](?!["'`])/g;

/** Fewer than this many is not the fingerprint: one could be an escape inside a one-line file. */
const MIN_ESCAPES = 2;

/** The names of the properties a tool's schema declares as file content. */
export function fileContentFields(schema: JsonSchema | undefined): string[] {
  const properties = (schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  return Object.entries(properties)
    .filter(([, property]) => {
      const p = property as { type?: unknown; contentMediaType?: unknown; contentEncoding?: unknown };
      return (
        p !== null &&
        typeof p === 'object' &&
        typeof p.contentMediaType === 'string' &&
        p.contentEncoding === undefined &&
        (p.type === undefined || p.type === 'string')
      );
    })
    .map(([name]) => name);
}

/**
 * The first file-content field holding the fingerprint: no real line break, and at least two
 * literal escapes where lines of code end. Text with real line breaks is never flagged, so code
 * whose string literals hold `\n` is left alone.
 */
export function overescapedField(
  args: Record<string, unknown>,
  schema: JsonSchema | undefined,
): Overescaped | undefined {
  for (const field of fileContentFields(schema)) {
    const text = args[field];
    if (typeof text !== 'string' || /[\n\r]/.test(text)) continue;
    const escapes = text.match(ESCAPE_AFTER_CODE)?.length ?? 0;
    if (escapes >= MIN_ESCAPES) return { field, text, escapes };
  }
  return undefined;
}

/** What the model is told: what arrived, that nothing ran, and how to send it. */
export function overescapedMessage(tool: string, found: Overescaped): string {
  return (
    `The "${found.field}" of ${tool} arrived with literal \\n (a backslash and an n) instead of ` +
    `real newlines and has no line break at all, so nothing was written. Call ${tool} again with ` +
    'real newlines in the text: in the JSON arguments a newline is written \\n, not \\\\n (and a tab \\t, not \\\\t).'
  );
}
