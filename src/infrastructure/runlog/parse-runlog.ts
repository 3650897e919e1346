import { FabricError } from '../../domain/errors.ts';
import { RUNLOG_FORMAT_VERSION, type RunEvent } from '../../domain/run-events.ts';

const ENVELOPE = ['kind', 'ts', 'run_id', 'seq'] as const;

/**
 * Parses runlog text. A last line without its newline that does not parse is a write torn by a
 * killed process: it is dropped and reported as `torn`. A bad line anywhere else is corruption;
 * so is a line written by a newer format than this reader knows (every earlier one is read).
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
    const where = `${location}:${index + 1}`;
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
        events.length === 0
          ? `${location} is not a fabric runlog: line ${index + 1} is not JSON. Give a runs/<run_id>/runlog.jsonl file or a run id.`
          : `${where}: not a JSON line; the runlog is damaged.`,
        { cause: error },
      );
    }
    const version = (value as { v?: unknown } | null)?.v;
    if (typeof version === 'number' && version > RUNLOG_FORMAT_VERSION) {
      throw new FabricError(
        'runlog_corrupt',
        `${where}: written in runlog format v${version}, newer than this agent-fabric reads (v${RUNLOG_FORMAT_VERSION} and earlier). Upgrade agent-fabric to read it.`,
      );
    }
    const missing = missingFields(value);
    if (missing.length > 0) {
      throw new FabricError(
        'runlog_corrupt',
        events.length === 0
          ? `${location} is not a fabric runlog: line ${index + 1} lacks ${missing.join(', ')} (every runlog line has kind, ts, run_id and seq).`
          : `${where}: a runlog line needs kind, ts, run_id and seq; this one lacks ${missing.join(', ')}.`,
      );
    }
    events.push(value as RunEvent);
  }
  return { events, torn };
}

function missingFields(value: unknown): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [...ENVELOPE];
  const record = value as Record<string, unknown>;
  return ENVELOPE.filter((field) =>
    field === 'seq' ? typeof record.seq !== 'number' : typeof record[field] !== 'string',
  );
}
