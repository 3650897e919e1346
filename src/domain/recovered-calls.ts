import type { RunEvent } from './run-events.ts';
import { plural } from './words.ts';

/**
 * How a `tool_call_recovered` event reads, the same in the CLI's progress, the replay timeline
 * and the viewer: what was run, in which dialect, and what was not (SPEC §16).
 */
export function describeRecovered(event: Extract<RunEvent, { kind: 'tool_call_recovered' }>): string {
  const parts = [
    `recovered ${plural(event.tool_calls.length, 'tool call')} written as text (${event.format})`,
  ];
  const refused = event.refused ?? [];
  if (refused.length > 0)
    parts.push(`not run: ${refused.map((name) => `"${name}"`).join(', ')} (not offered)`);
  if ((event.malformed ?? 0) > 0) parts.push(`${plural(event.malformed ?? 0, 'call')} unreadable`);
  return parts.join('; ');
}
