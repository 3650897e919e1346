/**
 * The probe suite (SPEC §20; research/local-model-quirks-2.md §J): a few short requests per model,
 * each bounded in tokens and time, each checked deterministically, each exchange kept. A model that
 * does not answer one within the bound is reported as such and the rest of its suite skipped, so a
 * model that never answers costs one bound, not seven.
 */
import type { ChatMessage, ToolSpec } from '../../domain/messages.ts';
import type { CatalogModel, ChatClient, ChatTurn, Clock, TurnSettings } from '../ports.ts';
import {
  type ModelCard,
  type ProbeExchange,
  type ProbeId,
  type ProbeResult,
  type ToolAbility,
  probeScore,
  serverVersionOf,
} from './model-card.ts';
import {
  type SeenCall,
  callsOf,
  describeTurn,
  finishProblem,
  isEmptyArgs,
  isObject,
  names,
  quote,
  shorten,
  speed,
  viaText,
} from './probe-checks.ts';

/** What a probe run needs of one model: the model as its server lists it, and a client for that server alone. */
export interface ProbeTarget {
  readonly model: CatalogModel;
  readonly client: ChatClient;
}

export interface ProbeLimits {
  /** The most one probe may take, first byte to last (default 30 s). */
  readonly probeTimeoutMs: number;
  /** The most tokens one answer may generate (default 256). */
  readonly maxOutputTokens: number;
  /** The window probe fills at most this many tokens, however large the window (default 32768). */
  readonly windowCapTokens: number;
}

export const DEFAULT_PROBE_LIMITS: ProbeLimits = {
  probeTimeoutMs: 30_000,
  maxOutputTokens: 256,
  windowCapTokens: 32_768,
};

/** Progress while a suite runs: a probe started, or ended with its result. */
export type ProbeProgress = (event: { model: string; probe: ProbeId; result?: ProbeResult }) => void;

const GET_TIME: ToolSpec = {
  name: 'get_time',
  description: 'Returns the current time and the path of the log file for this hour.',
  parameters: { type: 'object', properties: {}, required: [] },
};
const READ_FILE: ToolSpec = {
  name: 'read_file',
  description: 'Reads a text file from a line offset.',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, offset: { type: 'integer' } },
    required: ['path', 'offset'],
  },
};
const FINISH_TASK: ToolSpec = {
  name: 'finish_task',
  description: 'Ends the task with its outcome.',
  parameters: {
    type: 'object',
    properties: {
      status: { type: 'string', enum: ['done', 'failed'] },
      summary: { type: 'string' },
      files_changed: { type: 'integer' },
    },
    required: ['status', 'summary', 'files_changed'],
  },
};
const FIRST_ASK = 'What time is it? Call the get_time tool.';
const TIME_RESULT = JSON.stringify({ time: '10:42', path: 'logs/10-42.txt' });
const SECOND_ASK = 'Now call read_file on the path get_time returned, from offset 10.';
const FINISH_ASK =
  'The task is complete. Call finish_task with status done, summary "probe complete" and files_changed 2.';
const HELLO_ASK = 'Say hello in one short sentence. Do not use tools.';

type Asked =
  | { readonly ok: true; readonly turn: ChatTurn; readonly ttftMs: number | null; readonly calls: SeenCall[] }
  | { readonly ok: false; readonly timedOut: boolean; readonly error: string };

/** Runs the suite against one model and returns its card. */
export async function runProbeSuite(
  target: ProbeTarget,
  options: { limits?: ProbeLimits; clock: Clock; onProgress?: ProbeProgress; signal?: AbortSignal },
): Promise<ModelCard> {
  const limits = options.limits ?? DEFAULT_PROBE_LIMITS;
  const { model } = target;
  const results: ProbeResult[] = [];
  const tokens = { prompt: 0, completion: 0 };
  const seen: SeenCall[] = [];
  let stopped: string | null = null;

  const ask = async (
    messages: ChatMessage[],
    tools: ToolSpec[],
    exchanges: ProbeExchange[],
    settings: TurnSettings = {},
  ): Promise<Asked> => {
    const timeout = AbortSignal.timeout(limits.probeTimeoutMs);
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
    const request = {
      model: model.id,
      messages,
      tools: tools.map((tool) => tool.name),
      settings: { maxOutputTokens: limits.maxOutputTokens, ...settings },
    };
    const started = Date.now();
    let firstAt: number | null = null;
    try {
      const turn = await target.client.complete(
        { model: model.id, messages, tools, signal, settings: request.settings },
        () => {
          firstAt ??= Date.now();
        },
      );
      tokens.prompt += turn.usage.promptTokens;
      tokens.completion += turn.usage.completionTokens;
      const calls = callsOf(turn);
      seen.push(...calls);
      exchanges.push({
        request: { ...request, messages: shorten(messages) },
        reply: {
          content: turn.content,
          reasoning: turn.reasoning ?? '',
          tool_calls: turn.toolCalls,
          finish_reason: turn.finishReason,
          usage: turn.usage,
          latency_ms: turn.latencyMs,
        },
      });
      return { ok: true, turn, ttftMs: firstAt === null ? null : firstAt - started, calls };
    } catch (error) {
      options.signal?.throwIfAborted();
      const timedOut = timeout.aborted;
      const message = timedOut
        ? `no answer within ${Math.round(limits.probeTimeoutMs / 1000)} s`
        : error instanceof Error
          ? error.message
          : String(error);
      exchanges.push({ request: { ...request, messages: shorten(messages) }, error: message });
      return { ok: false, timedOut, error: message };
    }
  };

  const probe = async (
    id: ProbeId,
    body: (exchanges: ProbeExchange[]) => Promise<Omit<ProbeResult, 'id' | 'exchanges'>>,
  ): Promise<void> => {
    options.onProgress?.({ model: model.id, probe: id });
    const exchanges: ProbeExchange[] = [];
    const result: ProbeResult =
      stopped !== null
        ? { id, outcome: 'skipped', detail: stopped, figures: {}, exchanges }
        : { id, ...(await body(exchanges)), exchanges };
    results.push(result);
    options.onProgress?.({ model: model.id, probe: id, result });
  };

  const failed = (asked: Extract<Asked, { ok: false }>) => {
    if (asked.timedOut) stopped = `not run: the model did not answer an earlier probe (${asked.error})`;
    return {
      outcome: asked.timedOut ? ('timeout' as const) : ('error' as const),
      detail: asked.error,
      figures: {},
    };
  };

  let firstCall: SeenCall | undefined;
  await probe('native_call', async (exchanges) => {
    const asked = await ask([{ role: 'user', content: FIRST_ASK }], [GET_TIME, READ_FILE], exchanges);
    if (!asked.ok) return failed(asked);
    const figures = speed(asked.turn, asked.ttftMs);
    firstCall = asked.calls.find((call) => call.name === 'get_time');
    const native = asked.calls.filter((call) => call.via === 'native');
    if (native.length === 1 && native[0]?.name === 'get_time' && isEmptyArgs(native[0].args))
      return { outcome: 'pass', detail: 'one native call to get_time with empty arguments', figures };
    if (native.length > 0)
      return { outcome: 'fail', detail: `native calls, but not one get_time(): ${names(native)}`, figures };
    const written = asked.calls[0];
    if (written !== undefined)
      return {
        outcome: 'fail',
        detail: `no native call; wrote ${written.name} as text (${written.dialect})`,
        figures,
      };
    return { outcome: 'fail', detail: `no call at all: ${quote(asked.turn.content)}`, figures };
  });

  await probe('second_call', async (exchanges) => {
    const call = firstCall ?? { name: 'get_time', args: {}, argsText: '{}', via: 'native' };
    const messages: ChatMessage[] = [
      { role: 'user', content: FIRST_ASK },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_probe_1', name: 'get_time', arguments: '{}' }],
      },
      { role: 'tool', toolCallId: 'call_probe_1', name: call.name, content: TIME_RESULT },
      { role: 'user', content: SECOND_ASK },
    ];
    const asked = await ask(messages, [GET_TIME, READ_FILE], exchanges);
    if (!asked.ok) return failed(asked);
    const read = asked.calls.find((c) => c.name === 'read_file');
    if (read === undefined)
      return { outcome: 'fail', detail: `no read_file call: ${describeTurn(asked)}`, figures: {} };
    const args = read.args as { path?: unknown; offset?: unknown };
    if (args.path !== 'logs/10-42.txt' || args.offset !== 10)
      return {
        outcome: 'fail',
        detail: `read_file called with ${read.argsText}, not the path get_time returned and offset 10`,
        figures: {},
      };
    return { outcome: 'pass', detail: `read_file(${read.argsText}) ${viaText(read)}`, figures: {} };
  });

  await probe('finish_task', async (exchanges) => {
    const asked = await ask([{ role: 'user', content: FINISH_ASK }], [FINISH_TASK], exchanges);
    if (!asked.ok) return failed(asked);
    const finish = asked.calls.find((c) => c.name === 'finish_task');
    if (finish === undefined)
      return { outcome: 'fail', detail: `no finish_task call: ${describeTurn(asked)}`, figures: {} };
    const problem = finishProblem(finish.args);
    if (problem !== null)
      return { outcome: 'fail', detail: `finish_task(${finish.argsText}): ${problem}`, figures: {} };
    return { outcome: 'pass', detail: `finish_task matches its schema ${viaText(finish)}`, figures: {} };
  });

  await probe('json_arguments', async () => {
    const native = seen.filter((call) => call.via === 'native');
    if (native.length === 0) return { outcome: 'fail', detail: 'no native call to check', figures: {} };
    const bad = native.filter((call) => !isObject(call.args));
    return bad.length === 0
      ? {
          outcome: 'pass',
          detail: `${native.length} native calls, every one's arguments a JSON object`,
          figures: {},
        }
      : {
          outcome: 'fail',
          detail: `arguments not a JSON object: ${bad.map((c) => c.argsText).join(', ')}`,
          figures: {},
        };
  });

  await probe('text_dialect', async () => {
    const written = seen.find((call) => call.via === 'dialect');
    if (written !== undefined)
      return {
        outcome: 'pass',
        detail: `writes its calls as text in the ${written.dialect} dialect (recovered, SPEC §16)`,
        figures: {},
      };
    if (seen.some((call) => call.via === 'native'))
      return { outcome: 'skipped', detail: 'not needed: native calls work', figures: {} };
    return { outcome: 'fail', detail: 'no call written in any dialect the fabric reads', figures: {} };
  });

  await probe('reasoning', async (exchanges) => {
    const thinks = model.thinking === true;
    const asked = await ask(
      [{ role: 'user', content: HELLO_ASK }],
      [GET_TIME],
      exchanges,
      thinks ? { think: 'off' } : {},
    );
    if (!asked.ok) return failed(asked);
    const reasoning = asked.turn.reasoning ?? '';
    const where = reasoning === '' ? 'no reasoning' : 'reasoning apart from the answer';
    const off = thinks ? `; think: off ${reasoning === '' ? 'honoured' : 'not honoured'}` : '';
    const figures = {
      reasoning_chars: reasoning.length,
      ...(thinks ? { think_off_honoured: reasoning === '' ? 1 : 0 } : {}),
    };
    if (asked.turn.content.trim() === '' || asked.calls.length > 0)
      return {
        outcome: 'fail',
        detail: `asked not to use tools, answered ${describeTurn(asked)} (${where}${off})`,
        figures,
      };
    return { outcome: 'pass', detail: `answered in prose, ${where}${off}`, figures };
  });

  await probe('window', async (exchanges) => {
    const window = model.contextLength ?? model.maxContextLength;
    if (window === undefined)
      return { outcome: 'skipped', detail: 'the server does not say its window', figures: {} };
    const fill = Math.min(Math.floor(window * 0.85), limits.windowCapTokens);
    const filler = 'alpha beta gamma delta '.repeat(Math.ceil((fill * 4) / 23)).slice(0, fill * 4);
    const asked = await ask(
      [{ role: 'user', content: `${filler}\n\nIgnore the text above. Reply with the single word: ready.` }],
      [],
      exchanges,
    );
    const figures: Record<string, number> = { window, filled_tokens: fill };
    if (!asked.ok)
      return {
        ...failed(asked),
        detail: `a request of about ${fill} tokens in a window of ${window}: ${asked.error}`,
        figures,
      };
    const prompt = asked.turn.usage.promptTokens;
    if (asked.ttftMs !== null && asked.ttftMs > 0)
      figures.prefill_tok_s = Math.round((prompt / asked.ttftMs) * 1000);
    figures.prompt_tokens = prompt;
    return {
      outcome: 'pass',
      detail: `a request of ${prompt} tokens in a window of ${window} was answered`,
      figures,
    };
  });

  return {
    model: model.id,
    backend: model.backend,
    baseUrl: model.baseUrl,
    serverVersion: serverVersionOf(model.server) ?? null,
    quantisation: model.quantisation ?? null,
    modelFile: model.fileId ?? null,
    probedAt: options.clock.now().toISOString(),
    tools: toolAbility(results, seen),
    dialect: seen.find((call) => call.via === 'dialect')?.dialect ?? null,
    score: probeScore(results),
    probes: results,
    tokens,
    battery: {},
  };
}

function toolAbility(results: readonly ProbeResult[], seen: readonly SeenCall[]): ToolAbility {
  if (seen.some((call) => call.via === 'native')) return 'native';
  if (seen.some((call) => call.via === 'dialect')) return 'dialect';
  const callProbes = results.filter(
    (r) => r.id === 'native_call' || r.id === 'second_call' || r.id === 'finish_task',
  );
  // Measured unable only when it answered and still did not call; a refusal to take tools counts too.
  return callProbes.some((r) => r.outcome === 'fail' || r.outcome === 'error') ? 'none' : 'unknown';
}
