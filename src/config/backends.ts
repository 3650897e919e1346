import { FabricError } from '../domain/errors.ts';
import type { Environment } from './env.ts';
import type { BackendConfig, ParsedConfig } from './schema.ts';
import { Secret } from './secret.ts';
import { normalizeLmStudioUrl, normalizeOllamaHost, parseLmStudioUrls } from './urls.ts';

type ParsedLlm = ParsedConfig['llm'];
type ListedBackend = ParsedLlm['backends'][number];

/**
 * `llm:` with the environment applied. LM Studio entries of `llm.backends` join
 * `lm_studio_urls` (replacing its default when the file sets none), an Ollama entry sets
 * `ollama_url`; `LM_STUDIO_URL` and `OLLAMA_HOST` override both, as before. The other entries
 * are resolved by `resolveBackends`.
 */
export function resolveLlm(llm: ParsedLlm, env: Environment, source: string, raw: { llm?: unknown }) {
  const file = (typeof raw.llm === 'object' && raw.llm !== null ? raw.llm : {}) as Record<string, unknown>;
  const local = (kind: 'lm_studio' | 'ollama') =>
    llm.backends.flatMap((backend, index) => (backend.kind === kind ? [{ backend, index }] : []));
  const lmStudio = local('lm_studio');
  const ollama = local('ollama');
  for (const { backend, index } of [...lmStudio, ...ollama]) {
    const extra = (['api_key_env', 'models', 'rate_limit'] as const).filter(
      (key) => backend[key] !== undefined,
    );
    if (extra.length > 0)
      throw new FabricError(
        'config_invalid',
        `${source}: llm.backends[${index}] (${backend.kind}): ${extra.join(', ')} is not taken for ${backend.kind}, only url. Remove it.`,
      );
  }
  for (const { backend, index } of lmStudio) {
    if (backend.parallel !== undefined)
      throw new FabricError(
        'config_invalid',
        `${source}: llm.backends[${index}] (lm_studio): parallel is not taken for lm_studio, which says its slots itself (config.parallel). Remove it.`,
      );
  }
  if (ollama.length > 1 || (ollama.length === 1 && file.ollama_url !== undefined))
    throw new FabricError(
      'config_invalid',
      `${source}: llm.backends: the fabric asks one Ollama server, and ${ollama.length > 1 ? 'several ollama entries' : 'both llm.ollama_url and an ollama entry'} name one. Keep one.`,
    );
  const listedUrls = lmStudio.map(({ backend }) => backend.url);
  const fileUrls = file.lm_studio_urls === undefined && listedUrls.length > 0 ? [] : llm.lm_studio_urls;
  const envUrls = env.LM_STUDIO_URL ? parseLmStudioUrls(env.LM_STUDIO_URL) : [];
  const lmStudioUrls =
    envUrls.length > 0 ? envUrls : [...new Set([...fileUrls, ...listedUrls].map(normalizeLmStudioUrl))];
  const ollamaUrl = env.OLLAMA_HOST ? env.OLLAMA_HOST : (ollama[0]?.backend.url ?? llm.ollama_url);
  const others = llm.backends.filter(
    (backend): backend is ListedBackend & { kind: BackendConfig['kind'] } =>
      backend.kind !== 'lm_studio' && backend.kind !== 'ollama',
  );
  return {
    ...llm,
    lm_studio_urls: lmStudioUrls,
    ollama_url: normalizeOllamaHost(ollamaUrl),
    ollama_parallel: ollama[0]?.backend.parallel ?? llm.ollama_parallel,
    backends: resolveBackends(others, env, source),
  };
}

/**
 * `llm.backends` with the environment applied: each URL normalised (scheme, no trailing `/v1`),
 * each name given (default: the kind) and unique, each key read from the variable `api_key_env`
 * names — the one place a key is read, wrapped so that nothing can print it.
 */
export function resolveBackends(
  backends: readonly BackendConfig[],
  env: Environment,
  source: string,
): BackendConfig[] {
  const seen = new Map<string, number>();
  return backends.map((backend, index) => {
    const where = `${source}: llm.backends[${index}]`;
    const name = backend.name ?? backend.kind;
    const before = seen.get(name);
    if (before !== undefined)
      throw new FabricError(
        'config_invalid',
        `${where}: the name "${name}" is taken by llm.backends[${before}]. Give each backend its own \`name:\` (e.g. ${name}-2).`,
      );
    seen.set(name, index);
    const url = normalizeLmStudioUrl(backend.url);
    if (!URL.canParse(url))
      throw new FabricError(
        'config_invalid',
        `${where} (${name}): url "${backend.url}" is not a URL. Give the server's root, e.g. http://127.0.0.1:8080.`,
      );
    if (backend.kind === 'openai' && backend.api_key_env === undefined && !isLocal(url))
      throw new FabricError(
        'config_invalid',
        `${where} (${name}): a hosted endpoint (${url}) needs a key: set api_key_env to the name of the environment variable that holds it (e.g. api_key_env: OPENAI_API_KEY).`,
      );
    const base = { ...backend, name, url };
    if (backend.api_key_env === undefined) return base;
    const key = env[backend.api_key_env]?.trim();
    if (key === undefined || key === '')
      throw new FabricError(
        'config_invalid',
        `${where} (${name}): api_key_env names ${backend.api_key_env}, which is not set. Export it (export ${backend.api_key_env}=…) or remove the backend.`,
      );
    return { ...base, api_key: new Secret(key) };
  });
}

/** A URL on this machine: a LiteLLM proxy there may take no key. */
function isLocal(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
}
