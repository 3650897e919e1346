import { createHash } from 'node:crypto';
import type { BackendKind, BackendProbe, CatalogModel } from '../../../application/ports.ts';
import { sleep } from '../backoff.ts';
import { asRecord, bodyError, describeFailure, fetchJson, numberField, stringField } from '../http-json.ts';

/** What a probe of a backend of `llm.backends` needs. */
export interface CompatProbeTarget {
  readonly kind: BackendKind;
  readonly name: string;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** Sent as `authorization: Bearer …` to this URL only. */
  readonly apiKey?: string | undefined;
  /** The variable the key came from, to name in an error (never the key). */
  readonly apiKeyEnv?: string | undefined;
  /** Only these ids are listed. */
  readonly models?: readonly string[] | undefined;
}

type Done = (models: readonly CatalogModel[], error?: string, state?: 'denied' | 'loading') => BackendProbe;

function start(target: CompatProbeTarget): Done {
  const started = Date.now();
  return (models, error, state) => ({
    backend: target.kind,
    name: target.name,
    baseUrl: target.baseUrl,
    ok: error === undefined,
    latencyMs: Date.now() - started,
    error,
    ...(state === 'denied' ? { denied: true } : {}),
    ...(state === 'loading' ? { loading: true } : {}),
    models: target.models === undefined ? models : models.filter((m) => target.models?.includes(m.id)),
  });
}

function headersOf(target: CompatProbeTarget): Record<string, string> {
  return target.apiKey === undefined ? {} : { authorization: `Bearer ${target.apiKey}` };
}

function timed(target: CompatProbeTarget, signal: AbortSignal | undefined) {
  const timeout = AbortSignal.timeout(target.timeoutMs);
  return { timeout, signal: signal ? AbortSignal.any([signal, timeout]) : timeout };
}

/** The `data` list of an OpenAI-style `/v1/models`, or undefined when the body has none. */
function modelList(body: unknown): Record<string, unknown>[] | undefined {
  const data = asRecord(body)?.data;
  if (!Array.isArray(data)) return undefined;
  return data.map(asRecord).filter((m): m is Record<string, unknown> => typeof m?.id === 'string');
}

function model(target: CompatProbeTarget, fields: Partial<CatalogModel> & { id: string }): CatalogModel {
  return {
    backend: target.kind,
    baseUrl: target.baseUrl,
    type: 'llm',
    toolUse: undefined,
    loaded: undefined,
    paramsB: undefined,
    contextLength: undefined,
    maxContextLength: undefined,
    ...fields,
  };
}

/** `/v1/models` refused: the key (401, 403), or another status, said in the server's words. */
function refusal(target: CompatProbeTarget, status: number, body: unknown, text: string, done: Done) {
  if (status === 401 || status === 403) {
    // The server's words are left out: a 401 may echo part of the key.
    const key =
      target.apiKeyEnv === undefined
        ? 'no key is configured: set api_key_env to the variable that holds one'
        : `the key in ${target.apiKeyEnv} was refused: check it and that it may use ${target.baseUrl}`;
    return done([], `HTTP ${status} from /v1/models: ${key}`, 'denied');
  }
  const words = bodyError(body) ?? stringField(asRecord(body), 'message') ?? text.slice(0, 80);
  return done([], `/v1/models: HTTP ${status}, ${words || 'no model list'}`);
}

/**
 * llama.cpp's `llama-server`: `/health` answers 503 `{"error":{"code":503,"message":"Loading
 * model","type":"unavailable_error"}}` until the model is loaded, which is waited out with
 * backoff by a caller that listens (`onProgress`, told once; up to `loadWaitMs`) and reported at
 * once to one that does not (`fabric health lm`); then the model from `/v1/models`
 * (`meta.n_ctx_train`, `meta.n_params`) and the window and slots from `/props`
 * (`default_generation_settings.n_ctx`, `total_slots`, `chat_template_caps.supports_tool_calls`).
 */
export async function probeLlamaServer(
  target: CompatProbeTarget,
  loadWaitMs: number,
  signal?: AbortSignal,
  onProgress?: (message: string) => void,
): Promise<BackendProbe> {
  const done = start(target);
  const until = Date.now() + loadWaitMs;
  let delayMs = 250;
  let told = false;
  for (;;) {
    const { timeout, signal: combined } = timed(target, signal);
    let health: Awaited<ReturnType<typeof fetchJson>>;
    try {
      health = await fetchJson(`${target.baseUrl}/health`, { signal: combined, headers: headersOf(target) });
    } catch (error) {
      return done([], describeFailure(error, timeout, target.timeoutMs));
    }
    if (health.status === 200) break;
    const loading = health.status === 503 && /loading/i.test(bodyError(health.body) ?? '');
    if (!loading) return refusal(target, health.status, health.body, health.text, done);
    // Only a run waits (it says so through onProgress); `fabric health lm` and `fabric models` tell at once.
    if (onProgress === undefined)
      return done([], 'loading its model (HTTP 503 "Loading model"); a run waits for it', 'loading');
    if (Date.now() + delayMs > until)
      return done(
        [],
        `still loading its model when the wait ran out (load_wait_s: ${Math.round(loadWaitMs / 1000)} s; raise it for a large model)`,
        'loading',
      );
    if (!told) {
      onProgress?.(`${target.name} (llama_cpp ${target.baseUrl}) is loading its model; waiting for it.`);
      told = true;
    }
    if (signal?.aborted) return done([], 'cancelled');
    await sleep(delayMs, signal ?? new AbortController().signal).catch(() => {});
    delayMs = Math.min(delayMs * 2, 2000);
  }
  try {
    const { timeout, signal: combined } = timed(target, signal);
    const headers = headersOf(target);
    const [list, props, slotList] = await Promise.all([
      fetchJson(`${target.baseUrl}/v1/models`, { signal: combined, headers }),
      fetchJson(`${target.baseUrl}/props`, { signal: combined, headers }).catch(() => undefined),
      fetchJson(`${target.baseUrl}/slots`, { signal: combined, headers }).catch(() => undefined),
    ]).catch((error: unknown) => {
      throw new Error(describeFailure(error, timeout, target.timeoutMs));
    });
    const entries = modelList(list.body);
    if (list.status !== 200 || entries === undefined)
      return refusal(target, list.status, list.body, list.text, done);
    const settings = asRecord(asRecord(props?.body)?.default_generation_settings);
    const caps = asRecord(asRecord(props?.body)?.chat_template_caps);
    const tools = caps?.supports_tool_calls ?? caps?.supports_tools;
    const window = numberField(settings, 'n_ctx');
    const slots = numberField(asRecord(props?.body), 'total_slots');
    const identity = llamaServerIdentity(props?.body, slotList?.body);
    return done(
      entries.map((entry) => {
        const meta = asRecord(entry.meta);
        const params = numberField(meta, 'n_params');
        return model(target, {
          id: entry.id as string,
          loaded: true,
          toolUse: typeof tools === 'boolean' ? tools : undefined,
          paramsB: params === undefined ? undefined : params / 1e9,
          contextLength: window,
          maxContextLength: numberField(meta, 'n_ctx_train') ?? window,
          parallel: slots,
          ...identity,
        });
      }),
    );
  } catch (error) {
    return done([], error instanceof Error ? error.message : String(error));
  }
}

/**
 * llama-server's build (`/props` `build_info`, `b<N>-<hash>`) and what reads its calls: the
 * chat format of `/slots` (its slots' `params.chat_format`: `Hermes 2 Pro`, `peg-native`, …) and the digest of `/props`
 * `chat_template`, the template the parser is derived from (research/local-model-quirks-2.md Q33).
 */
function llamaServerIdentity(props: unknown, slots: unknown): { server?: string; toolParser?: string } {
  const build = stringField(asRecord(props), 'build_info');
  const template = stringField(asRecord(props), 'chat_template');
  // Each slot's params say the chat format its requests are parsed with (`params.chat_format`).
  const slot = asRecord(Array.isArray(slots) ? slots[0] : undefined);
  const format = stringField(asRecord(slot?.params), 'chat_format') ?? stringField(slot, 'chat_format');
  const parts = [
    ...(format === undefined ? [] : [`chat format ${format}`]),
    ...(template === undefined
      ? []
      : [`chat template sha256:${createHash('sha256').update(template).digest('hex').slice(0, 12)}`]),
  ];
  return {
    ...(build === undefined ? {} : { server: `llama-server ${build}` }),
    ...(parts.length === 0 ? {} : { toolParser: parts.join(', ') }),
  };
}

/**
 * vLLM's `/v1/models`: each served model with `max_model_len`, the window it runs at (fixed at
 * start, `--max-model-len`), and its `/version`. Whether tools work is known only when a request
 * is refused; which `--tool-call-parser` it runs, no endpoint says (Q38).
 */
export async function probeVllm(target: CompatProbeTarget, signal?: AbortSignal): Promise<BackendProbe> {
  const { signal: combined } = timed(target, signal);
  const version = await fetchJson(`${target.baseUrl}/version`, {
    signal: combined,
    headers: headersOf(target),
  })
    .then((reply) => (reply.status === 200 ? stringField(asRecord(reply.body), 'version') : undefined))
    .catch(() => undefined);
  return probeModelList(target, signal, (entry) => {
    const window = numberField(entry, 'max_model_len');
    return {
      loaded: true,
      contextLength: window,
      maxContextLength: window,
      ...(version === undefined ? {} : { server: `vLLM ${version}` }),
    };
  });
}

/**
 * An OpenAI-compatible endpoint with a key (OpenAI, OpenRouter, Hugging Face, a LiteLLM proxy):
 * `/v1/models` with the key, checked once here so that a refused key fails before any run.
 * OpenRouter's list says each model's `context_length` and whether `tools` is a supported parameter.
 */
export async function probeKeyed(target: CompatProbeTarget, signal?: AbortSignal): Promise<BackendProbe> {
  const probe = await probeModelList(target, signal, (entry) => {
    const supported = entry.supported_parameters;
    const window = numberField(entry, 'context_length');
    return {
      toolUse: Array.isArray(supported) ? supported.includes('tools') : undefined,
      contextLength: window,
      maxContextLength: window,
    };
  });
  if (!probe.ok || probe.models.every((m) => m.contextLength !== undefined)) return probe;
  return withOllamaWindows(target, probe, signal);
}

/**
 * Ollama reached through its OpenAI-compatible `/v1` (an `openai` backend at its URL): its
 * `/v1/models` says no window, and `/v1` cannot set `num_ctx`, so a model runs at the window
 * Ollama loaded it with — `/api/ps` `context_length` (research/lm-server-protocols.md §2.4, §2.6).
 * Asked only when the catalog gave no window, and only of a server whose `/api/version` says it is
 * Ollama; its version is the models' `server`.
 */
async function withOllamaWindows(
  target: CompatProbeTarget,
  probe: BackendProbe,
  signal: AbortSignal | undefined,
): Promise<BackendProbe> {
  const { signal: combined } = timed(target, signal);
  const headers = headersOf(target);
  try {
    const version = await fetchJson(`${target.baseUrl}/api/version`, { signal: combined, headers });
    const said = version.status === 200 ? stringField(asRecord(version.body), 'version') : undefined;
    if (said === undefined) return probe;
    const ps = await fetchJson(`${target.baseUrl}/api/ps`, { signal: combined, headers });
    const running = asRecord(ps.body)?.models;
    const windows = new Map<string, number>();
    for (const raw of Array.isArray(running) ? running : []) {
      const entry = asRecord(raw);
      const name = stringField(entry, 'name') ?? stringField(entry, 'model');
      const window = numberField(entry, 'context_length');
      if (name !== undefined && window !== undefined) windows.set(name, window);
    }
    const windowOf = (id: string) => windows.get(id) ?? windows.get(`${id}:latest`);
    return {
      ...probe,
      models: probe.models.map((m) => {
        const window = m.contextLength === undefined ? windowOf(m.id) : undefined;
        return {
          ...m,
          server: m.server ?? `Ollama ${said}`,
          ...(window === undefined
            ? {}
            : {
                contextLength: window,
                loaded: true,
                windowSource: "Ollama's /api/ps context_length (through /v1, which cannot set num_ctx)",
              }),
        };
      }),
    };
  } catch {
    return probe;
  }
}

async function probeModelList(
  target: CompatProbeTarget,
  signal: AbortSignal | undefined,
  fields: (entry: Record<string, unknown>) => Partial<CatalogModel>,
): Promise<BackendProbe> {
  const done = start(target);
  const { timeout, signal: combined } = timed(target, signal);
  try {
    const reply = await fetchJson(`${target.baseUrl}/v1/models`, {
      signal: combined,
      headers: headersOf(target),
    });
    const entries = modelList(reply.body);
    if (reply.status !== 200 || entries === undefined)
      return refusal(target, reply.status, reply.body, reply.text, done);
    return done(entries.map((entry) => model(target, { ...fields(entry), id: entry.id as string })));
  } catch (error) {
    return done([], describeFailure(error, timeout, target.timeoutMs));
  }
}
