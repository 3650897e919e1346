import type { FakeChatMessage, ScriptedTurn } from './fake-llm-server.ts';

/** How a scripted model behaves on the units pack. */
export type UnitsBehaviour = 'converts' | 'never_finishes';

/**
 * A responder for the `units` example pack that answers from the conversation itself: `converts`
 * calls convert_units, then finishes with the answer; `never_finishes` keeps sending an invalid
 * finish_task (no `answer`) until the run hits its step limit. Concurrent runs cannot take each
 * other's turns, since nothing is consumed.
 */
export function unitsResponder(
  behaviourOf: (model: string, task: string) => UnitsBehaviour,
  options: { delayMs?: number } = {},
): (request: { model: string; messages: readonly FakeChatMessage[] }) => ScriptedTurn {
  return ({ model, messages }) => {
    const task = messages.find((m) => m.role === 'user')?.content ?? '';
    const converted = messages.some((m) => m.role === 'tool' && m.content.includes(' = '));
    const usage = { prompt: 100 + messages.length * 10, completion: 10 };
    const turn = (reply: ScriptedTurn & { reply: unknown }) =>
      options.delayMs === undefined ? reply : { ...reply, delayMs: options.delayMs };
    if (behaviourOf(model, task) === 'never_finishes') {
      return turn({
        reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done?' } }], usage },
      });
    }
    if (!converted) {
      return turn({
        reply: {
          toolCalls: [{ name: 'convert_units', arguments: { value: 3, from: 'km', to: 'mi' } }],
          usage,
        },
      });
    }
    return turn({
      reply: {
        toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted.', answer: '1.864114 mi' } }],
        usage,
      },
    });
  };
}
