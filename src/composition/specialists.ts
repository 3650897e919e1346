/** The configured specialists as `fabric specialists` lists them: the registry alone. */
import type { SpecialistInfo } from '../application/ports.ts';
import type { FabricConfig } from '../config/load.ts';
import { BUILTIN_PACKS } from '../infrastructure/registry/builtin-packs.ts';
import { ConfigRegistry } from '../infrastructure/registry/config-registry.ts';

/** Lists needs no model backend, MCP or control plane (and starts faster without them). */
export function listSpecialists(config: FabricConfig): readonly SpecialistInfo[] {
  return new ConfigRegistry({
    specialists: config.specialists,
    baseDir: config.baseDir,
    builtins: BUILTIN_PACKS,
    policy: config.policy.rules,
    settings: { searxngUrl: config.search.searxng_url },
  }).list();
}
