import { APIConnectionError, APIError, APIUserAbortError } from 'openai/core/error';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { NotAStreamError } from './not-a-stream-error.ts';
import { MAX_RETRY_AFTER_MS, retryAfterMs } from './rate-gate.ts';

/** A backend fault: `transient` ones are retried, the others end the run at once. */
export type ClassifiedFault =
  /** `waitMs`: how long the server asked to be left alone (`retry-after`), instead of the backoff. */
  | { readonly transient: true; readonly reason: string; readonly waitMs?: number }
  | { readonly transient: false; readonly error: FabricError };

/** Where a request went, for error messages. */
export interface RequestTarget {
  readonly backendLabel: string;
  readonly baseUrl: string;
  readonly model: string;
}

/** The servers' words for a prompt that does not fit the model's window (research/lm-server-protocols.md). */
const CONTEXT_OVERFLOW =
  /no user query found|exceeds the context length|longer than the context length|does not fit in (the )?context|context size has been exceeded|greater than the context length|context the overflows|exceeded max context length/i;

/** Decides whether a failed request is worth retrying, and words the error a user sees when it is not. */
export function classifyFault(error: unknown, target: RequestTarget): ClassifiedFault {
  if (error instanceof APIUserAbortError) {
    return {
      transient: false,
      error: new FabricError('run_cancelled', 'The request was cancelled.', { cause: error }),
    };
  }
  if (error instanceof APIConnectionError) {
    return {
      transient: true,
      reason: `cannot reach ${target.baseUrl} (${errorMessage(error.cause ?? error)})`,
    };
  }
  if (error instanceof APIError) {
    const fault = classifyStatus(error.status, serverMessage(error), target, error);
    if (!fault.transient || (error.status !== 429 && error.status !== 503)) return fault;
    const wait = retryAfterMs(error.headers);
    if (wait === undefined) return fault;
    if (wait <= MAX_RETRY_AFTER_MS) return { ...fault, waitMs: wait };
    // A wait past the longest honoured (a spent quota) is not retried: it says when to come back.
    return {
      transient: false,
      error: new FabricError(
        'backend_unavailable',
        `${target.backendLabel} is ${error.status === 429 ? 'rate-limited' : 'unavailable'} and asks to wait ` +
          `${Math.ceil(wait / 1000)} s, longer than a run waits (${MAX_RETRY_AFTER_MS / 1000} s): run again later, ` +
          "or check the key's quota (a hosted endpoint) or lower its rate_limit.requests_per_minute.",
        { cause: error, details: { status: error.status, retry_after_ms: wait } },
      ),
    };
  }
  if (error instanceof NotAStreamError) {
    return {
      transient: false,
      error: new FabricError(
        'backend_error',
        `${target.baseUrl} ${error.message}: it does not look like an OpenAI-compatible server. ` +
          'Check LM_STUDIO_URL / OLLAMA_HOST (or llm.* in the config) point at LM Studio or Ollama.',
        { cause: error, details: { status: error.status } },
      ),
    };
  }
  // Anything else thrown while reading the stream (a socket reset, a parse error) is a cut stream.
  return { transient: true, reason: `stream failed: ${errorMessage(error)}` };
}

/**
 * Classifies an HTTP refusal (or, with no status, an error reported inside a stream) by its status
 * and the server's own words. Shared by the OpenAI-compatible path and Ollama's native `/api/chat`.
 */
export function classifyStatus(
  status: number | undefined,
  message: string,
  target: RequestTarget,
  cause: unknown,
): ClassifiedFault {
  if (/does not support tools/i.test(message)) {
    return {
      transient: false,
      error: new FabricError(
        'model_lacks_tools',
        `Model "${target.model}" on ${target.backendLabel} does not support tools (the server said: ${message}). ` +
          "The fabric needs native tool calling: choose a tool-capable model with --model or the specialist's `model:` " +
          '(`fabric models` shows which models support tools).',
        { cause, details: { status, model: target.model } },
      ),
    };
  }
  // vLLM started without tool calling refuses every request that offers tools (vllm#9986).
  if (/--enable-auto-tool-choice|--tool-call-parser/.test(message)) {
    return {
      transient: false,
      error: new FabricError(
        'model_lacks_tools',
        `${target.backendLabel} refused tools for "${target.model}" (the server said: ${message}). ` +
          'Restart vLLM with tool calling on: `vllm serve <model> --enable-auto-tool-choice --tool-call-parser <parser>` ' +
          "(hermes for Qwen, llama3_json for Llama 3, mistral for Mistral; see vLLM's tool calling docs).",
        { cause, details: { status, model: target.model } },
      ),
    };
  }
  // The server's tool-call parser could not read the model's output (research/local-model-quirks-2.md
  // Q17, Q18, Q20): the same request makes the same output, so it is the model's, not a dead server.
  const unparsed = unparsedOutput(message);
  if (unparsed !== undefined) {
    return {
      transient: false,
      error: new FabricError(
        'model_output_unparseable',
        `${target.backendLabel} could not parse the tool call "${target.model}" wrote (the server said: ${clip(message)}).`,
        { cause, details: { status, raw: unparsed } },
      ),
    };
  }
  // A prompt over the window is never mended by a retry, whatever the status says: Ollama answers
  // 500 when its own truncation dropped the user turn (ollama#18107); LM Studio 0.4.21 streams 200
  // with `event: error` "Input does not fit in context length…" (lmstudio-bug-tracker #2322), its
  // MLX engine "Context size has been exceeded" (#2339).
  if (CONTEXT_OVERFLOW.test(message)) {
    return { transient: false, error: contextOverflow(message, target, cause) };
  }
  if (status === undefined || status === 429 || status >= 500) {
    return { transient: true, reason: `${status ?? 'stream error'}: ${message}` };
  }
  if (/context|n_ctx|too long|does not fit/i.test(message)) {
    return { transient: false, error: contextOverflow(message, target, cause) };
  }
  if (status === 404 || /not found|invalid model/i.test(message)) {
    return {
      transient: false,
      error: new FabricError(
        'model_not_found',
        `${target.backendLabel} has no model "${target.model}" (${message}). Load or pull it, or pick another with --model.`,
        { cause },
      ),
    };
  }
  return {
    transient: false,
    error: new FabricError(
      'backend_error',
      `${target.backendLabel} refused the request with ${status}: ${message}`,
      {
        cause,
        details: { status },
      },
    ),
  };
}

/**
 * The model's output a parser failure carries, or undefined when the message is no parser failure:
 * llama-server's `Failed to parse input at pos N: <raw>` (Q17), Ollama's built-in parsers' `XML
 * syntax error …` (Q18) and `error parsing tool call: raw='…'` (Q20).
 */
function unparsedOutput(message: string): string | undefined {
  const llama = /Failed to parse input at pos \d+: ?([\s\S]*)$/.exec(message);
  if (llama !== null) return llama[1] ?? '';
  const raw = /error parsing tool call: raw='([\s\S]*)'/.exec(message);
  if (raw !== null) return raw[1] ?? '';
  if (/^(XML syntax error|error parsing tool call|expected element type <)/.test(message)) return '';
  return undefined;
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function contextOverflow(message: string, target: RequestTarget, cause: unknown): FabricError {
  return new FabricError(
    'context_overflow',
    `The conversation no longer fits in the context window of "${target.model}" (${message}). ` +
      'Load the model with a larger context length, or give the task in smaller parts.',
    { cause },
  );
}

/** The server's own words: `error` is a string on some servers and an object on others. */
function serverMessage(error: APIError): string {
  const body = error.error as unknown;
  if (typeof body === 'string') return body;
  if (body && typeof body === 'object') {
    const record = body as Record<string, unknown>;
    if (typeof record.message === 'string') return record.message;
    if (typeof record.error === 'string') return record.error;
    if (record.error && typeof record.error === 'object') {
      const inner = (record.error as Record<string, unknown>).message;
      if (typeof inner === 'string') return inner;
    }
  }
  return error.message;
}
