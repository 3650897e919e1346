import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';

/**
 * Parses runlog text. A last line without its newline that does not parse is a write torn by a
 * killed process: it is dropped and reported as `torn`. A bad line anywhere else is corruption.
 */
export function parseRunlog(text: string, location: string): { events: RunEvent[]; torn: boolean } {
  const lines = text.split('\n');
  const endsCleanly = text.endsWith('\n') || text.length === 0;
  const events: RunEvent[] = [];
  let torn = false;
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!;
    if (line.trim() === '') continue;
    const isLast = index === lines.length - 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      if (isLast && !endsCleanly) {
        torn = true;
        break;
      }
      throw new FabricError(
        'runlog_corrupt',
        `${location}:${index + 1}: not a JSON line; the runlog is damaged.`,
        {
          cause: error,
        },
      );
    }
    if (!isRunEvent(value)) {
      throw new FabricError(
        'runlog_corrupt',
        `${location}:${index + 1}: a runlog line needs kind, ts, run_id and seq; this one lacks them.`,
      );
    }
    events.push(value);
  }
  return { events, torn };
}

function isRunEvent(value: unknown): value is RunEvent {
  if (value === null || typeof value !== 'object') return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.kind === 'string' &&
    typeof record.ts === 'string' &&
    typeof record.run_id === 'string' &&
    typeof record.seq === 'number'
  );
}
