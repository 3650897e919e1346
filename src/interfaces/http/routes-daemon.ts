import { realpath } from 'node:fs/promises';
import { Hono } from 'hono';
import { errorMessage } from '../../domain/errors.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { daemonRepos, readDaemonStatus } from '../daemon/daemon-status-reader.ts';
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
    const runsDir = fabric.config.runs_dir;
    const asked = c.req.query('repo');
    if (asked !== undefined) {
      const repo = await realpath(asked).catch(() => {
        throw new ApiError('not_found', `No repository at ${asked}.`);
      });
      return c.json(await statusOrError(repo, runsDir));
    }
    const daemons = await Promise.all(
      (await daemonRepos(runsDir)).map((repo) => statusOrError(repo, runsDir)),
    );
    return c.json({ daemons });
  });
  return app;
}

async function statusOrError(repo: string, runsDir: string) {
  try {
    return await readDaemonStatus(repo, runsDir);
  } catch (error) {
    // A repository moved or its openspec/ removed: said, not a failed request for the others.
    return { repo, error: errorMessage(error) };
  }
}
