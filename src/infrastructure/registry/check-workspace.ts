import { stat } from 'node:fs/promises';
import { FabricError } from '../../domain/errors.ts';

/**
 * A workspace must be an existing directory, for every specialist: a run in one that is not
 * fails before it starts, naming the path. One the request gave is the caller's mistake
 * (`usage`); one from the config is the config's (`config_invalid`).
 */
export async function checkWorkspace(
  specialist: string,
  workspace: string,
  requested: boolean,
): Promise<void> {
  const info = await stat(workspace).catch((error: NodeJS.ErrnoException) => error);
  if (!(info instanceof Error) && info.isDirectory()) return;
  const problem =
    info instanceof Error
      ? info.code === 'ENOENT' || info.code === 'ENOTDIR'
        ? 'does not exist'
        : `cannot be opened (${info.code ?? info.message})`
      : 'is a file, not a directory';
  const fix = requested
    ? 'Give the path of an existing directory.'
    : `Create it, or fix specialists.${specialist}.workspace in the config.`;
  throw new FabricError(
    requested ? 'usage' : 'config_invalid',
    `Specialist "${specialist}": the workspace ${workspace} ${problem}. ${fix}`,
    { details: { specialist, workspace } },
  );
}
