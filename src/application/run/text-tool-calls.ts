import type { ToolCall } from '../../domain/messages.ts';

/** A tool call recovered from text, and which convention the model used. */
export interface RecoveredCalls {
  readonly format: 'hermes' | 'lmstudio_tool_request' | 'bare_json';
  readonly calls: readonly ToolCall[];
}

/**
 * Local models sometimes write a tool call as text instead of in `tool_calls` (SPEC §3). This
 * recovers one only when it names a tool that was offered; nothing in the prompt asks for text.
 */
export function recoverTextToolCalls(
  content: string,
  offered: ReadonlySet<string>,
  step: number,
): RecoveredCalls | null {
  const text = content.trim();
  if (text === '') return null;
  const hermes = collect(text, /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g);
  if (hermes.length > 0) return build('hermes', hermes, offered, step);
  const lmstudio = collect(text, /\[TOOL_REQUEST\]\s*([\s\S]*?)\s*\[END_TOOL_REQUEST\]/g);
  if (lmstudio.length > 0) return build('lmstudio_tool_request', lmstudio, offered, step);
  const unfenced = text.replace(/^```(?:json)?\s*\n?([\s\S]*?)\n?```$/, '$1').trim();
  if (unfenced.startsWith('{') || unfenced.startsWith('[')) {
    return build('bare_json', [unfenced], offered, step);
  }
  return null;
}

function collect(text: string, pattern: RegExp): string[] {
  return [...text.matchAll(pattern)].map((match) => match[1] ?? '');
}

function build(
  format: RecoveredCalls['format'],
  bodies: readonly string[],
  offered: ReadonlySet<string>,
  step: number,
): RecoveredCalls | null {
  const calls: ToolCall[] = [];
  for (const body of bodies) {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return null;
    }
    for (const item of Array.isArray(value) ? value : [value]) {
      const call = asCall(item, offered);
      if (!call) return null;
      calls.push({ id: `recovered_${step}_${calls.length}`, ...call });
    }
  }
  return calls.length > 0 ? { format, calls } : null;
}

function asCall(item: unknown, offered: ReadonlySet<string>): { name: string; arguments: string } | null {
  if (item === null || typeof item !== 'object') return null;
  const record = item as Record<string, unknown>;
  const fn =
    typeof record.function === 'object' && record.function !== null
      ? (record.function as Record<string, unknown>)
      : record;
  const name = fn.name;
  if (typeof name !== 'string' || !offered.has(name)) return null;
  const args = fn.arguments ?? fn.parameters ?? {};
  if (typeof args === 'string') return { name, arguments: args };
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return null;
  return { name, arguments: JSON.stringify(args) };
}
