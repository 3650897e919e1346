import { Hono } from 'hono';
import type { Fabric } from '../../composition/fabric.ts';
import type { AuthVariables } from './auth.ts';

/** `/v1/workers`: the queue's workers; an empty list when runs execute in-process. */
export function workerRoutes(fabric: Fabric): Hono<{ Variables: AuthVariables }> {
  const app = new Hono<{ Variables: AuthVariables }>();
  app.get('/', async (c) => {
    const services = await fabric.runQueue();
    if (services === null) return c.json({ queue: 'in_process' as const, workers: [] });
    return c.json({ queue: 'postgres' as const, workers: await services.workers.list() });
  });
  return app;
}
