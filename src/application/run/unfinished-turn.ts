/**
 * A text reply in a stream that ended with no finish chunk (research/local-model-quirks-2.md Q15,
 * Q18; lm-server-protocols.md, Ollama's OpenAI layer). vLLM's stream breaks off without its
 * `length` chunk when generation fails mid-turn (vllm #37937), and Ollama's `/v1` stops without a
 * finish chunk after cancelling the generation on a parser error: the text is what came before
 * the failure, not a whole answer. It is treated as cut (Q15's "Do"): not taken as the run's
 * result, the model is asked again; twice in a row ends the run with the diagnosis. A call whose
 * arguments parse carries its own proof of being whole and is run as any turn's is.
 */
import type { ChatMessage } from '../../domain/messages.ts';
import { FabricError } from '../../domain/errors.ts';
import type { RunRecorder } from './run-recorder.ts';

const UNFINISHED_START = 'Your reply ended before the server finished it';

export async function handleUnfinishedText(
  text: string,
  options: {
    readonly messages: ChatMessage[];
    readonly step: number;
    readonly recorder: RunRecorder;
    readonly model: string;
  },
): Promise<void> {
  const { messages, step, recorder } = options;
  const last = messages.at(-1);
  const again = last?.role === 'user' && last.content.startsWith(UNFINISHED_START);
  const base = { kind: 'model_quirk', step, quirk: 'turn_cut', note: 'Q15', raw: text } as const;
  if (again) {
    await recorder.record({
      ...base,
      detail: 'a text reply in a stream with no finish_reason again: the run ends',
    });
    throw new FabricError(
      'model_output_unparseable',
      `The server ended its stream with no finish_reason twice in a row, after text "${options.model}" wrote: ` +
        "its generation failed mid-turn (vLLM's stream breaking off, Ollama's /v1 swallowing its parser's error), " +
        'so the text is not a whole answer. Try another model or another build of the server; for Ollama, ' +
        'a backend of kind ollama (its native API) shows the error itself.',
    );
  }
  await recorder.record({
    ...base,
    detail: 'the stream ended with no finish_reason after text: not taken as the answer; asked again',
  });
  messages.push({ role: 'assistant', content: text, toolCalls: [] });
  messages.push({
    role: 'user',
    content:
      `${UNFINISHED_START}: the stream stopped with no finish_reason, so what arrived may be only part ` +
      'of it and is not taken as your answer. Answer again: call finish_task with your result, or a tool.',
  });
}
