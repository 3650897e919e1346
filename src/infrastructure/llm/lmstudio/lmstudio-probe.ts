import type { BackendProbe, CatalogModel } from '../../../application/ports.ts';
import { bodyError, describeFailure, fetchJson } from '../http-json.ts';
import { parseOpenAiModels, parseV0Models, parseV1Models } from './lmstudio-models.ts';

type Parser = (body: unknown, baseUrl: string) => CatalogModel[] | undefined;

// Richest first: v1 (>= 0.4.0), v0 (>= 0.3.6), then the OpenAI list every version has.
const ROUTES: readonly (readonly [string, Parser])[] = [
  ['/api/v1/models', parseV1Models],
  ['/api/v0/models', parseV0Models],
  ['/v1/models', parseOpenAiModels],
];

/**
 * Asks one LM Studio server what it has. A route counts only when its body has the fields that
 * route promises: LM Studio answers routes it does not know with 200 and an `error` field.
 */
export async function probeLmStudio(
  baseUrl: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<BackendProbe> {
  const started = Date.now();
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const done = (models: readonly CatalogModel[], error?: string): BackendProbe => ({
    backend: 'lm_studio',
    baseUrl,
    ok: error === undefined,
    latencyMs: Date.now() - started,
    error,
    models,
  });
  const refusals: string[] = [];
  try {
    for (const [path, parse] of ROUTES) {
      const reply = await fetchJson(`${baseUrl}${path}`, { signal: combined });
      const models = parse(reply.body, baseUrl);
      if (models !== undefined) return done(models);
      refusals.push(
        `${path}: HTTP ${reply.status}, ${bodyError(reply.body) ?? (reply.body === undefined ? `not JSON: ${reply.text.slice(0, 60)}` : 'no model list')}`,
      );
    }
    return done([], `not an LM Studio server (${refusals.join('; ')})`);
  } catch (error) {
    return done([], describeFailure(error, timeout, timeoutMs));
  }
}
