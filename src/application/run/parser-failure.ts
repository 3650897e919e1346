/**
 * A turn the server's own tool-call parser failed on (research/local-model-quirks-2.md rules 6
 * and 7, Q17, Q18, Q20): llama-server's `500 Failed to parse input at pos N: <raw>` carries the
 * model's output, which the fabric's dialect readers may still read; otherwise the model is asked
 * again with a correction (the identical request would make the identical output), and a second
 * failure in a row ends the run with `model_output_unparseable`, never as a dead server.
 */
import { FabricError } from '../../domain/errors.ts';
import type { ChatMessage, ToolSpec } from '../../domain/messages.ts';
import type { ChatTurn } from '../ports.ts';
import type { RunRecorder } from './run-recorder.ts';
import { recoverWrittenCalls } from './written-calls.ts';

const NUDGE_START = 'Your last reply could not be read by the server as a tool call';

/** What a parser failure comes to: the calls read from the raw output, or asked again. */
export type ParserFailureOutcome =
  | { readonly kind: 'recovered'; readonly turn: ChatTurn }
  | { readonly kind: 'asked_again' };

export async function handleParserFailure(
  error: FabricError,
  options: {
    readonly specs: readonly ToolSpec[];
    readonly messages: ChatMessage[];
    readonly step: number;
    readonly recorder: RunRecorder;
  },
): Promise<ParserFailureOutcome> {
  const { specs, messages, step, recorder } = options;
  const raw = typeof error.details.raw === 'string' ? error.details.raw : '';
  const base = { kind: 'model_quirk', step, quirk: 'parse_failed', note: 'Q17', raw } as const;
  if (raw.trim() !== '') {
    const written = await recoverWrittenCalls({ content: raw }, specs, step, recorder);
    if (written.kind === 'calls') {
      await recorder.record({
        ...base,
        detail: `the server could not parse the model's output; ${written.calls.length} call(s) read from it`,
      });
      return {
        kind: 'recovered',
        turn: {
          content: '',
          toolCalls: written.calls,
          finishReason: 'tool_calls',
          usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
          latencyMs: 0,
          attempts: 1,
          backend: '',
        },
      };
    }
  }
  const last = messages.at(-1);
  if (last?.role === 'user' && last.content.startsWith(NUDGE_START)) {
    await recorder.record({
      ...base,
      detail: 'failed again after the model was asked to write the call again',
    });
    throw new FabricError(
      'model_output_unparseable',
      `${error.message} It failed again after the model was asked to write the call again, so the run ends: ` +
        'the server cannot read the tool calls this model writes. Try another model (`fabric battery` shows which ' +
        "models' calls a server reads), or another build of the server.",
      { cause: error, details: error.details },
    );
  }
  await recorder.record({
    ...base,
    detail: 'nothing readable in it; the model is asked again with a correction',
  });
  const names = specs.map((spec) => spec.name).join(', ');
  messages.push({
    role: 'user',
    content:
      `${NUDGE_START}, so nothing ran. Write the call again: one call, its arguments as plain JSON, ` +
      'no tags like <parameter> or </function> inside argument values; write a large file in smaller parts. ' +
      `The tools are: ${names}.`,
  });
  return { kind: 'asked_again' };
}

const EMPTY_START = 'Your reply came back empty though';

/**
 * An empty message whose tokens were counted (Q19, rule 5): the server's template parser dropped
 * what the model wrote — a call naming no offered tool, typically its description — so it is a
 * parse failure, not an answer. Asked again once with the exact tool names; a second in a row
 * ends the run with `model_output_unparseable`.
 */
export async function handleEmptyTurn(
  tokens: number,
  options: {
    readonly specs: readonly ToolSpec[];
    readonly messages: ChatMessage[];
    readonly step: number;
    readonly recorder: RunRecorder;
    readonly model: string;
    /**
     * The stream ended with no finish_reason and nothing in it: Ollama's `/v1` turns its parser's
     * error line into an empty chunk and stops (research/local-model-quirks-2.md Q18).
     */
    readonly unfinished?: boolean;
  },
): Promise<void> {
  const { specs, messages, step, recorder } = options;
  const last = messages.at(-1);
  const again = last?.role === 'user' && last.content.startsWith(EMPTY_START);
  const unfinished = options.unfinished === true && tokens === 0;
  const base = { kind: 'model_quirk', step, quirk: 'empty_turn', note: unfinished ? 'Q18' : 'Q19' } as const;
  const wrote = unfinished ? 'the server ended its stream unfinished' : `you wrote ${tokens} tokens`;
  if (again) {
    await recorder.record({
      ...base,
      detail: unfinished
        ? 'empty and unfinished again: the run ends'
        : `empty again (${tokens} tokens counted): the run ends`,
    });
    throw new FabricError(
      'model_output_unparseable',
      `"${options.model}" ${unfinished ? 'got a stream that ended unfinished with nothing in it' : `wrote ${tokens} tokens`} twice in a row and the server returned an empty message: ` +
        'its tool-call parser dropped what the model wrote (a call naming no offered tool, as Ollama does for ' +
        "template-parsed models). The server cannot read this model's tool calls: try another model or server " +
        '(`fabric battery` shows which work).',
    );
  }
  await recorder.record({
    ...base,
    detail: unfinished
      ? "the stream ended with no finish_reason and nothing in it (Ollama's /v1 swallows its parser's error): asked again"
      : `an empty message with ${tokens} tokens counted: the server's parser dropped the output; asked again`,
  });
  messages.push({ role: 'assistant', content: '', toolCalls: [] });
  messages.push({
    role: 'user',
    content:
      `${EMPTY_START} ${wrote}: the server could not read a tool call in it, so nothing ran. ` +
      `Call exactly one of these tools by its exact name, with JSON arguments: ${specs.map((spec) => spec.name).join(', ')}.`,
  });
}
