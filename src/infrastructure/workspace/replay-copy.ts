/**
 * Replay's copy of a workspace (SPEC §6): the whole tree but what left-out.ts leaves out, with
 * `.git/` kept, under its own name in a new temporary directory.
 */
import { cp, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { ReplayWorkspace } from '../../application/replay/replay-run.ts';
import { FabricError } from '../../domain/errors.ts';
import { isLeftOut } from './left-out.ts';

/** Copies the workspace, `.git/` and the runs directory included, into a new temp directory under its own name. */
export async function copyReplayWorkspace(source: string): Promise<ReplayWorkspace> {
  const info = await stat(source).catch(() => undefined);
  if (!info?.isDirectory())
    throw new FabricError('usage', `The workspace ${source} is not a directory; pass --workspace DIR.`);
  const dir = await mkdtemp(join(tmpdir(), 'fabric-replay-'));
  const workspace = join(dir, basename(source));
  await cp(source, workspace, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (path) => !isLeftOut(source, path, { keepGit: true }),
  });
  return { path: workspace, dispose: () => rm(dir, { recursive: true, force: true }) };
}
