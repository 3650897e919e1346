import type { RunObserver } from '../../application/ports.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { showText } from '../../domain/show-argv.ts';
import { plural } from '../../domain/words.ts';

/** Sends one progress message; must not throw. */
export type ProgressSink = (message: string) => void;

/** A run observer that reports each runlog event (each step, tool call, result) as one progress message. */
export function progressObserver(sink: ProgressSink): RunObserver {
  return {
    onEvent: (event) => sink(describeEvent(event)),
    // Streamed text and call starts would be one notification per token: the events suffice.
    onText: () => {},
    onToolCallStarted: () => {},
  };
}

/** One line a client can show for a runlog event. */
export function describeEvent(event: RunEvent): string {
  switch (event.kind) {
    case 'run_start':
      return `run ${event.run_id} started: ${event.specialist} on ${event.model}`;
    case 'llm_request':
      return `step ${event.step}: asking the model${event.final_turn ? ' for a final report' : ''}`;
    case 'llm_response':
      return `step ${event.step}: the model answered${
        event.tool_calls.length > 0 ? ` with ${event.tool_calls.map((call) => call.name).join(', ')}` : ''
      }`;
    case 'llm_retry':
      return `step ${event.step}: retrying the model (attempt ${event.attempt}): ${event.reason}`;
    case 'tool_call':
      return `step ${event.step}: ${event.tool} ${clip(event.arguments)}`;
    case 'tool_result':
      return `step ${event.step}: ${event.tool} done (${event.duration_ms} ms)`;
    case 'tool_error':
      return `step ${event.step}: ${event.tool} failed: ${clip(event.error)}`;
    case 'finish_rejected':
      return `step ${event.step}: finish_task rejected: ${clip(event.message)}`;
    case 'finish_gate_passed':
      return `step ${event.step}: finish gate passed: ${clip(event.message)}`;
    case 'run_end':
      return `run ${event.run_id} ended: ${event.status} after ${plural(event.steps, 'step')}`;
    default:
      return `${event.kind}`;
  }
}

/** One line for a client to show a person: control characters escaped, at most 160 characters. */
function clip(text: string): string {
  const line = showText(text.replace(/\s+/g, ' ').trim());
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}
