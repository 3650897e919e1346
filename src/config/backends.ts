import { FabricError } from '../domain/errors.ts';
import type { Environment } from './env.ts';
import type { BackendConfig } from './schema.ts';
import { Secret } from './secret.ts';
import { normalizeLmStudioUrl } from './urls.ts';

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
