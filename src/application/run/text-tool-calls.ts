import type { JsonSchema, ToolCall } from '../../domain/messages.ts';
import { type TextCallDialect, type WrittenCall, readWrittenCalls } from './text-call-dialects.ts';

export type { TextCallDialect } from './text-call-dialects.ts';

/** Tool calls recovered from text, the dialect they were written in, and what was not run. */
export interface RecoveredCalls {
  readonly format: TextCallDialect;
  /** The calls naming an offered tool, ready to dispatch. */
  readonly calls: readonly ToolCall[];
  /** Names of tools the text called that were not offered: never run. */
  readonly refused: readonly string[];
  /** Blocks of the dialect's markup whose call could not be read. */
  readonly malformed: number;
}

/**
 * Local models sometimes write a tool call as text instead of in `tool_calls` (SPEC §3, §16),
 * each family in its own dialect. This reads every call the text holds and keeps, to run, only
 * those naming an offered tool; the others are listed in `refused`. Null when the text holds no
 * call markup at all (or only JSON that reads as an answer, not a call). `schemas` (the offered
 * tools' parameter schemas) turn the text values of XML parameters into the types they declare.
 */
export function scanTextToolCalls(
  content: string,
  offered: ReadonlySet<string>,
  step: number,
  schemas: ReadonlyMap<string, JsonSchema> = new Map(),
): RecoveredCalls | null {
  const text = content.trim();
  if (text === '') return null;
  const found = readWrittenCalls(text);
  if (found === null) return null;
  // JSON with a name and no arguments key is a call only when it names an offered tool.
  if (found.dialect === 'bare_json' && found.calls.some((c) => c.argsGiven === false && !offered.has(c.name)))
    return null;
  const calls: ToolCall[] = [];
  const refused: string[] = [];
  let malformed = found.malformed;
  for (const written of found.calls) {
    if (!offered.has(written.name)) {
      refused.push(written.name);
      continue;
    }
    const args = argumentsOf(
      written,
      found.dialect === 'qwen3_coder_xml' ? schemas.get(written.name) : undefined,
    );
    if (args === null) {
      malformed++;
      continue;
    }
    calls.push({ id: recoveredId(step, calls.length), name: written.name, arguments: args });
  }
  return { format: found.dialect, calls, refused, malformed };
}

/**
 * The calls to run from a text (`scanTextToolCalls`), or null when there are none: no markup,
 * or only calls that name tools that were not offered or could not be read.
 */
export function recoverTextToolCalls(
  content: string,
  offered: ReadonlySet<string>,
  step: number,
  schemas?: ReadonlyMap<string, JsonSchema>,
): RecoveredCalls | null {
  const scanned = scanTextToolCalls(content, offered, step, schemas);
  return scanned !== null && scanned.calls.length > 0 ? scanned : null;
}

/**
 * The id of the `index`th call recovered at `step`: nine letters and digits (`r` + step + index),
 * which every family's template accepts, Mistral's included (research/local-model-quirks-2.md Q10).
 */
export function recoveredId(step: number, index: number): string {
  return `r${String(step % 100000).padStart(5, '0')}${String(index % 1000).padStart(3, '0')}`;
}

/** A call's arguments as the JSON object text `tool_calls` carry; null when they are not an object. */
function argumentsOf(call: WrittenCall, schema: JsonSchema | undefined): string | null {
  let args = call.args;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return null;
    }
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return null;
  return JSON.stringify(schema === undefined ? args : typed(args as Record<string, unknown>, schema));
}

/**
 * XML parameters arrive as text; a parameter the schema declares as a number, boolean, array or
 * object is read as JSON (as the Qwen3-coder parsers do), and kept as text when it does not parse.
 */
function typed(args: Record<string, unknown>, schema: JsonSchema): Record<string, unknown> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    const type = properties[key]?.type;
    const types = Array.isArray(type) ? type : [type];
    if (typeof value !== 'string' || types.includes('string') || type === undefined) {
      out[key] = value;
      continue;
    }
    try {
      out[key] = JSON.parse(value);
    } catch {
      out[key] = value;
    }
  }
  return out;
}
