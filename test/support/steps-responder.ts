/**
 * A fake model for many concurrent units runs: it answers each request from the run's own task
 * ("steps=N delay=MS"), converting N times and then finishing, each answer after MS, so runs
 * never take each other's turns. It counts the model's turns in the conversation, which a
 * compaction would shorten: give the model a window no such run fills.
 */
import type { ScriptedTurn } from './fake-llm-server.ts';

const convert: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 2, from: 'km', to: 'm' } }] },
};
const finish: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted.', answer: '2000 m' } }] },
};

export function stepsResponder({
  messages,
}: {
  messages: readonly { role: string; content: string }[];
}): ScriptedTurn {
  const task = messages.find((message) => message.role === 'user')?.content ?? '';
  const match = /steps=(\d+) delay=(\d+)/.exec(task);
  const steps = match ? Number(match[1]) : 1;
  const delayMs = match ? Number(match[2]) : 0;
  const done = messages.filter((message) => message.role === 'assistant').length;
  return { ...(done < steps ? convert : finish), delayMs } as ScriptedTurn;
}
