/**
 * The calls of a turn as the conversation keeps them (research/local-model-quirks-2.md rules 2
 * and 4): arguments canonical (`canonical-calls.ts`), ids unique in the conversation and, when
 * the fabric makes one, nine alphanumerics, which every template accepts (Q10). What was mended
 * or dropped is recorded as `model_quirk`, the raw text with it.
 */
import type { ChatMessage, ToolCall, ToolSpec } from '../../domain/messages.ts';
import { isNineAlnum, nineAlnumId } from '../../domain/tool-call-ids.ts';
import { simpleToolSchema } from '../../domain/tool-schema.ts';
import { type CanonicalCall, canonicalCall } from './canonical-calls.ts';
import type { RunRecorder } from './run-recorder.ts';

/** The ids the conversation already holds: a repeated one would collapse two calls into one. */
export function usedCallIds(messages: readonly ChatMessage[]): Set<string> {
  const ids = new Set<string>();
  for (const message of messages)
    if (message.role === 'assistant') for (const call of message.toolCalls) ids.add(call.id);
  return ids;
}

/** The turn's calls made canonical, with fresh ids where the server's is empty or already used. */
export async function storeCalls(
  calls: readonly ToolCall[],
  options: {
    readonly specs: readonly ToolSpec[];
    readonly messages: readonly ChatMessage[];
    readonly step: number;
    readonly recorder: RunRecorder;
    /** Every id rewritten to nine alphanumerics (a Mistral-family template, Q10). */
    readonly nineAlnumIds?: boolean;
  },
): Promise<CanonicalCall[]> {
  // Read against the schema as sent: a $ref inlined says the type the parameter has (Q2).
  const schemas = new Map(options.specs.map((spec) => [spec.name, simpleToolSchema(spec.parameters)]));
  const used = usedCallIds(options.messages);
  const stored: CanonicalCall[] = [];
  for (const call of calls) {
    const fit = options.nineAlnumIds === true ? isNineAlnum(call.id) : call.id.trim() !== '';
    let id = call.id;
    if (!fit || used.has(id)) {
      do id = nineAlnumId();
      while (used.has(id));
    }
    used.add(id);
    const canonical = canonicalCall({ ...call, id }, schemas.get(call.name));
    stored.push(canonical);
    const base = { kind: 'model_quirk', step: options.step, call_id: id, tool: call.name } as const;
    if (canonical.problem !== undefined) {
      await options.recorder.record({
        ...base,
        quirk: 'arguments_unreadable',
        note: 'Q7',
        detail: `stored as {} and not run: ${canonical.problem}`,
        raw: call.arguments,
      });
    } else if (canonical.overescaped !== undefined) {
      const { field, text, escapes } = canonical.overescaped;
      await options.recorder.record({
        ...base,
        quirk: 'arguments_overescaped',
        note: 'Q4',
        detail: `not run: "${field}" has ${escapes} literal \\n or \\t escapes where lines end and no line break; the model is asked for real newlines`,
        field,
        raw: text,
      });
    }
    if (canonical.problem === undefined && canonical.repairs.length > 0) {
      await options.recorder.record({
        ...base,
        quirk: 'arguments_repaired',
        note: canonical.repairs.some((repair) => repair.startsWith('arguments were a JSON string'))
          ? 'Q1'
          : 'Q3',
        detail: canonical.repairs.join('; '),
        raw: call.arguments,
      });
    }
  }
  return stored;
}
