/**
 * Loads a model on LM Studio at a chosen context window (SPEC §17) through its REST API
 * (`POST /api/v1/models/load`, LM Studio 0.4.0+), and reads back the window it loaded: LM Studio
 * may load less than asked (memory). Older servers answer the route with an error field: then
 * nothing is loaded here, and LM Studio loads the model itself on the first request (JIT).
 */
import type { LoadResult } from '../../../application/models/run-window.ts';
import { asRecord, bodyError, describeFailure, fetchJson } from '../http-json.ts';

/** The window the model was loaded at, or why this server did not load it so. */
export async function loadLmStudioModel(
  baseUrl: string,
  model: string,
  contextLength: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<LoadResult> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const reply = await fetchJson(`${baseUrl}/api/v1/models/load`, {
      method: 'POST',
      body: { model, context_length: contextLength, echo_load_config: true },
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    const body = asRecord(reply.body);
    const refused = bodyError(reply.body);
    if (reply.status !== 200 || body === undefined || refused !== undefined) {
      const why = refused ?? `HTTP ${reply.status}`;
      // Before 0.4.0 the route is unknown: LM Studio loads the model itself on the first request.
      return /unexpected endpoint|not found|HTTP 404/i.test(why)
        ? { failed: 'its REST API, which loads at a window, needs LM Studio 0.4.0 or later' }
        : { failed: `LM Studio refused: ${why}` };
    }
    const loaded = asRecord(body.load_config)?.context_length;
    return { window: typeof loaded === 'number' && loaded > 0 ? loaded : contextLength };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    return { failed: describeFailure(error, timeout, timeoutMs) };
  }
}

/**
 * Unloads a model instance LM Studio loaded through its REST API (`POST /api/v1/models/unload
 * {instance_id}`): an instance loaded so has no idle TTL (research/local-model-quirks.md). True
 * when the server unloaded it; false when it answered otherwise or not at all.
 */
export async function unloadLmStudioModel(
  baseUrl: string,
  instanceId: string,
  timeoutMs: number,
): Promise<boolean> {
  try {
    const reply = await fetchJson(`${baseUrl}/api/v1/models/unload`, {
      method: 'POST',
      body: { instance_id: instanceId },
      signal: AbortSignal.timeout(timeoutMs),
    });
    return reply.status === 200 && asRecord(reply.body)?.error === undefined;
  } catch {
    return false;
  }
}
