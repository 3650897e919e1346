import { Hono } from 'hono';
import type { BackendProbe } from '../../application/ports.ts';
import type { ModelChoice } from '../../application/models/resolve-model.ts';
import { FabricError } from '../../domain/errors.ts';
import { type ControlExports, buildExports } from '../../composition/control-store.ts';
import { backendHealthView, backendModelsView } from '../../application/models/backend-views.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { modelCardStore } from '../../composition/model-cards.ts';
import type { ModelCard } from '../../application/models/model-card.ts';
import { ApiError } from './api-error.ts';
import type { AuthVariables } from './auth.ts';
import { workerRoutes } from './routes-workers.ts';

const EXPORT_NAMES = ['lm_usage_7d', 'lm_health_7d', 'lm_insights_7d', 'lm_indicator'] as const;

/** `/v1`: specialists, models, health, the LM indicator and the control-plane exports. */
export function infoRoutes(fabric: Fabric): Hono<{ Variables: AuthVariables }> {
  const app = new Hono<{ Variables: AuthVariables }>();

  app.get('/specialists', (c) => c.json({ specialists: fabric.registry.list() }));
  // The queue's workers sit with the other read-only views of the fabric.
  app.route('/workers', workerRoutes(fabric));

  app.get('/models', async (c) => {
    const probes = await fabric.catalog.probe(c.req.raw.signal);
    const cards = await modelCardStore(fabric).list();
    // Choosing is a pure function of the probes, so every specialist's choice costs nothing more.
    const chosen: Record<string, unknown> = {};
    for (const { name } of fabric.registry.list()) chosen[name] = chooseFor(fabric, probes, name, cards);
    return c.json({
      backends: probes.map((probe) => backendModelsView(probe, undefined, fabric.config.profiles, cards)),
      chosen,
    });
  });

  app.get('/health', async (c) => {
    const probes = await fabric.catalog.probe(c.req.raw.signal);
    const backends = probes.map(backendHealthView);
    const usable = backends.some((backend) => backend.usable);
    // Open without the token (for load balancers and probes), but the backends' addresses are not.
    if (!c.get('authorized')) return c.json({ ok: true, usable });
    return c.json({ ok: true, usable, backends });
  });

  app.get('/lm-indicator', async (c) => c.json((await exportsOf(fabric)).lm_indicator));

  app.get('/exports/:name', async (c) => {
    const name = c.req.param('name');
    const known = EXPORT_NAMES.find((candidate) => candidate === name);
    if (known === undefined)
      throw new ApiError('not_found', `No export "${name}". Exports: ${EXPORT_NAMES.join(', ')}.`);
    return c.json((await exportsOf(fabric))[known]);
  });

  return app;
}

/** The exports from the server's own control store; `db_off` documents when the database is off or disabled. */
async function exportsOf(fabric: Fabric): Promise<ControlExports> {
  return buildExports(await fabric.controlStore());
}

function chooseFor(
  fabric: Fabric,
  probes: readonly BackendProbe[],
  specialist: string,
  cards: readonly ModelCard[],
) {
  try {
    const choice: ModelChoice = fabric.chooseModelFrom(probes, specialist, undefined, cards);
    return {
      id: choice.model.id,
      backend: choice.model.backend,
      base_url: choice.model.baseUrl,
      reason: choice.reason,
    };
  } catch (error) {
    if (error instanceof FabricError) return { error: { code: error.code, message: error.message } };
    throw error;
  }
}
