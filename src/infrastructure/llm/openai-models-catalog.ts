import type { BackendKind, BackendProbe, CatalogModel, ModelCatalog } from '../../application/ports.ts';
import { errorMessage } from '../../domain/errors.ts';

/** A backend to ask. */
export interface BackendTarget {
  readonly backend: BackendKind;
  readonly baseUrl: string;
}

/**
 * Asks every backend's OpenAI-compatible `/v1/models`, concurrently, with a short timeout. It
 * trusts fields, not status codes: LM Studio answers unknown routes 200 with an `error` field.
 * It knows ids only; type comes from the name, capabilities stay unknown.
 */
export class OpenAiModelsCatalog implements ModelCatalog {
  readonly #targets: readonly BackendTarget[];
  readonly #timeoutMs: number;

  constructor(targets: readonly BackendTarget[], timeoutMs: number) {
    this.#targets = targets;
    this.#timeoutMs = timeoutMs;
  }

  probe(signal?: AbortSignal): Promise<readonly BackendProbe[]> {
    return Promise.all(this.#targets.map((target) => this.#probeOne(target, signal)));
  }

  async #probeOne(target: BackendTarget, signal: AbortSignal | undefined): Promise<BackendProbe> {
    const started = Date.now();
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const fail = (error: string): BackendProbe => ({
      ...target,
      ok: false,
      latencyMs: Date.now() - started,
      error,
      models: [],
    });
    try {
      const response = await fetch(`${target.baseUrl}/v1/models`, { signal: combined });
      const text = await response.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return fail(`HTTP ${response.status}, not JSON: ${text.slice(0, 80)}`);
      }
      const record = (body ?? {}) as Record<string, unknown>;
      if (record.error !== undefined)
        return fail(`server error: ${JSON.stringify(record.error).slice(0, 160)}`);
      if (!response.ok || !Array.isArray(record.data)) return fail(`HTTP ${response.status}, no model list`);
      const models = record.data
        .map((entry) => (entry as { id?: unknown }).id)
        .filter((id): id is string => typeof id === 'string')
        .map(
          (id): CatalogModel => ({
            id,
            backend: target.backend,
            baseUrl: target.baseUrl,
            type: /embed/i.test(id) ? 'embedding' : 'unknown',
            toolUse: undefined,
            loaded: undefined,
            paramsB: undefined,
            contextLength: undefined,
            maxContextLength: undefined,
          }),
        );
      return { ...target, ok: true, latencyMs: Date.now() - started, error: undefined, models };
    } catch (error) {
      return fail(timeout.aborted ? `no answer within ${this.#timeoutMs} ms` : errorMessage(error));
    }
  }
}
