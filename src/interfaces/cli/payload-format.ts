import { stringify as stringifyYaml } from 'yaml';

/**
 * The payload for a person: the summary first, then each other field; lists and records as
 * indented YAML (`artifacts:` then `  - src/a.rs`), never as raw JSON.
 */
export function formatPayload(payload: Record<string, unknown>): string {
  const { summary, ...rest } = payload;
  const lines = typeof summary === 'string' ? [summary] : [];
  for (const [key, value] of Object.entries(rest)) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value) && value.length === 0) continue;
    if (typeof value === 'object') lines.push(stringifyYaml({ [key]: value }, { lineWidth: 0 }).trimEnd());
    else lines.push(`${key}: ${String(value)}`);
  }
  return `${lines.join('\n')}\n`;
}
