import { access, realpath, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import type { FabricSettings } from '../../application/ports.ts';
import type { SandboxConfig } from '../../config/schema.ts';
import { FabricError } from '../../domain/errors.ts';
import { SANDBOX_HOME, bwrapArgs, probeBwrap } from '../sandbox/bwrap.ts';
import { recordPathsIn } from '../sandbox/record-paths.ts';
import type { StdioLaunch } from './stdio-transport.ts';

/** Where the sandbox already mounts everything read-only: a program there needs no extra bind. */
const SYSTEM_PREFIXES = ['/usr/', '/bin/', '/sbin/', '/lib/', '/lib64/'];

/**
 * Rewrites a stdio MCP server's launch to run inside bubblewrap, as `shell` commands do
 * (`sandbox.mcp: true`): its own user, PID and network namespaces, `/usr` read-only, the working
 * directory (the workspace) writable, a private `/tmp` and HOME, no network unless
 * `sandbox.network`, and nothing else of the host but `sandbox.read_only_paths` and the
 * program's own directory. Without bubblewrap, `when_no_os_sandbox: refuse` refuses to start it.
 */
export async function sandboxedLaunch(
  launch: StdioLaunch,
  sandbox: SandboxConfig,
  baseDir: string,
  onNotice: (message: string) => void = () => {},
  settings: FabricSettings = { searxngUrl: undefined },
): Promise<StdioLaunch> {
  const probe = await probeBwrap();
  if (!probe.ok) {
    if (sandbox.when_no_os_sandbox === 'refuse') {
      throw new FabricError(
        'pack_load_failed',
        `sandbox.mcp asks for the OS sandbox, but ${probe.reason}. Install bubblewrap, or set ` +
          'sandbox.when_no_os_sandbox to "argv_policy_only" to start MCP servers unsandboxed.',
      );
    }
    onNotice(`MCP servers start without the OS sandbox: ${probe.reason}.`);
    return launch;
  }
  const program = await resolveProgram(launch.command, launch.env.PATH ?? '', launch.cwd);
  const readOnlyPaths = sandbox.read_only_paths.map((path) => resolve(baseDir, path));
  const programDir = dirname(program);
  if (!SYSTEM_PREFIXES.some((prefix) => program.startsWith(prefix))) readOnlyPaths.push(programDir);
  const args = await bwrapArgs(
    probe.bwrap,
    {
      root: launch.cwd,
      toolchain: { binDir: undefined, cargoHome: undefined, rustupHome: undefined },
      network: sandbox.network,
      // The run record (runs directory, config file) stays read-only when it lies in the workspace.
      readOnlyInWorkspace: (
        await recordPathsIn(await realpath(launch.cwd).catch(() => launch.cwd), settings)
      ).map((entry) => entry.absolute),
      readOnlyPaths,
    },
    [program, ...launch.args],
  );
  return { command: probe.bwrap.path, args, env: { ...launch.env, HOME: SANDBOX_HOME }, cwd: launch.cwd };
}

/** The real path of the program, looked up on the launch's own PATH (never the fabric's). */
async function resolveProgram(command: string, path: string, cwd: string): Promise<string> {
  if (command.includes('/')) return realpath(isAbsolute(command) ? command : resolve(cwd, command));
  for (const dir of path.split(delimiter)) {
    if (dir === '' || dir === '.') continue;
    const candidate = join(dir, command);
    const info = await stat(candidate).catch(() => undefined);
    if (
      info?.isFile() &&
      (await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      ))
    ) {
      return realpath(candidate);
    }
  }
  throw new FabricError('pack_load_failed', `MCP server command "${command}" is not on PATH (${path}).`);
}
