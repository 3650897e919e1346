import type { BackendProbe, CatalogModel, ModelCatalog } from '../../../application/ports.ts';
import { bodyError, describeFailure, fetchJson, stringField, asRecord } from '../http-json.ts';
import { type OllamaModelFacts, parsePs, parseTags, withShow } from './ollama-models.ts';
import { toCatalogModel } from './ollama-models.ts';

/**
 * Asks one Ollama server what it has: `/api/version` to know it is Ollama (a JSON `version`, not
 * a status code: `GET /` is plain text and LM Studio answers anything 200), `/api/tags` for the
 * models, `/api/show` for capabilities and trained context, `/api/ps` for what is loaded.
 */
export class OllamaCatalog implements ModelCatalog {
  readonly #baseUrl: string;
  readonly #timeoutMs: number;
  #version: string | undefined;

  constructor(baseUrl: string, timeoutMs: number) {
    this.#baseUrl = baseUrl;
    this.#timeoutMs = timeoutMs;
  }

  /** The server's version, once a probe has seen it. */
  get version(): string | undefined {
    return this.#version;
  }

  async probe(signal?: AbortSignal): Promise<readonly BackendProbe[]> {
    const started = Date.now();
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const done = (models: readonly CatalogModel[], error?: string): BackendProbe[] => [
      {
        backend: 'ollama',
        baseUrl: this.#baseUrl,
        ok: error === undefined,
        latencyMs: Date.now() - started,
        error,
        models,
      },
    ];
    try {
      const version = await fetchJson(`${this.#baseUrl}/api/version`, { signal: combined });
      const versionText = stringField(asRecord(version.body), 'version');
      if (versionText === undefined) {
        const said = bodyError(version.body) ?? version.text.slice(0, 60);
        return done([], `not an Ollama server (/api/version: HTTP ${version.status}, ${said})`);
      }
      this.#version = versionText;
      const [tags, ps] = await Promise.all([
        fetchJson(`${this.#baseUrl}/api/tags`, { signal: combined }),
        fetchJson(`${this.#baseUrl}/api/ps`, { signal: combined }).catch(() => undefined),
      ]);
      const listed = parseTags(tags.body);
      if (listed === undefined)
        return done([], `/api/tags: HTTP ${tags.status}, ${bodyError(tags.body) ?? 'no model list'}`);
      const running = ps === undefined ? undefined : parsePs(ps.body);
      const facts = await Promise.all(listed.map((entry) => this.#show(entry, combined)));
      return done(facts.map((entry) => toCatalogModel(entry, running, this.#baseUrl, versionText)));
    } catch (error) {
      return done([], describeFailure(error, timeout, this.#timeoutMs));
    }
  }

  /** `/api/show` only where `/api/tags` (>= 0.30.0) did not already say it all. */
  async #show(entry: OllamaModelFacts, signal: AbortSignal): Promise<OllamaModelFacts> {
    if (entry.capabilities !== undefined && entry.trainedContext !== undefined) return entry;
    try {
      const show = await fetchJson(`${this.#baseUrl}/api/show`, {
        method: 'POST',
        body: { model: entry.name },
        signal,
      });
      return withShow(entry, show.body);
    } catch (error) {
      if (signal.aborted) throw error;
      return entry;
    }
  }
}
