import { realpath } from 'node:fs/promises';
import { Hono } from 'hono';
import { errorMessage } from '../../domain/errors.ts';
import type { DaemonStatusReader } from '../../application/daemon/daemon-status-reader.ts';
import { createDaemonStatusReader } from '../../composition/daemon.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { ApiError } from './api-error.ts';
import type { AuthVariables } from './auth.ts';

/**
 * `GET /v1/daemon`: the OpenSpec daemon's status (SPEC §11) for every repository a daemon has
 * worked on with this runs directory, or for one (`?repo=DIR`). Read from the checklists and the
 * state files, so it answers with the control plane off and while a daemon runs elsewhere.
 */
export function daemonRoutes(fabric: Fabric): Hono<{ Variables: AuthVariables }> {
  const app = new Hono<{ Variables: AuthVariables }>();
  app.get('/', async (c) => {
    const reader = createDaemonStatusReader(fabric.config.runs_dir);
    const asked = c.req.query('repo');
    if (asked !== undefined) {
      const repo = await realpath(asked).catch(() => {
        throw new ApiError('not_found', `No repository at ${asked}.`);
      });
      return c.json(await statusOrError(reader, repo));
    }
    const daemons = await Promise.all((await reader.repos()).map((repo) => statusOrError(reader, repo)));
    return c.json({ daemons });
  });
  return app;
}

async function statusOrError(reader: DaemonStatusReader, repo: string) {
  try {
    return await reader.read(repo);
  } catch (error) {
    // A repository moved or its openspec/ removed: said, not a failed request for the others.
    return { repo, error: errorMessage(error) };
  }
}
