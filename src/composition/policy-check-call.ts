/**
 * The call `fabric policy check` is asked about, held against the specialist as a run would see
 * it: the tools its pack offers, which of them take a path, and the workspace confinement the
 * file tools apply to that path (SPEC §19).
 */
import { realpath } from 'node:fs/promises';
import { type FabricSettings, type Tool, effectOf } from '../application/ports.ts';
import type { FabricConfig } from '../config/load.ts';
import { FabricError, ToolError } from '../domain/errors.ts';
import { COMMAND_TOOL } from '../domain/policy.ts';
import { didYouMean } from '../domain/words.ts';
import { BUILTIN_PACKS } from '../infrastructure/registry/builtin-packs.ts';
import { ConfigRegistry } from '../infrastructure/registry/config-registry.ts';
import { PathScope } from '../infrastructure/sandbox/path-scope.ts';
import { recordPathsIn } from '../infrastructure/sandbox/record-paths.ts';

/** The tools a specialist offers: its pack's, and those its MCP servers will add. */
export interface OfferedTools {
  /** The pack's tools by name: whether each takes a `path`, and whether it only reads. */
  readonly tools: ReadonlyMap<string, { readonly path: boolean; readonly reads: boolean }>;
  /** `mcp__<server>__` per MCP server: a server's tools are known only once it runs. */
  readonly mcpPrefixes: readonly string[];
}

/** The call as given: the tool (already defaulted to shell for a command), its argv or path. */
export interface CallQuery {
  readonly tool: string;
  readonly argv: readonly string[] | undefined;
  readonly path: string | undefined;
}

const HELP = '(fabric policy check --help)';

/** Builds the specialist's pack as a run does (without starting MCP servers) and lists its tools. */
export async function offeredTools(config: FabricConfig, specialist: string): Promise<OfferedTools> {
  const registry = new ConfigRegistry({
    specialists: config.specialists,
    baseDir: config.baseDir,
    builtins: BUILTIN_PACKS,
    policy: config.policy.rules,
    settings: settingsOf(config),
  });
  const pack = await registry.getPack(specialist);
  const tools = new Map<string, { path: boolean; reads: boolean }>();
  try {
    await pack.open(new AbortController().signal);
    for (const tool of pack.tools()) {
      const properties = (tool.spec.parameters as { properties?: Record<string, unknown> }).properties;
      const path = properties !== undefined && Object.hasOwn(properties, 'path');
      tools.set(tool.spec.name, { path, reads: path && readsOnly(tool) });
    }
  } finally {
    await pack.close();
  }
  const servers = Object.keys(config.specialists[specialist]?.mcp_servers ?? {});
  return { tools, mcpPrefixes: servers.map((server) => `mcp__${server}__`) };
}

/** Refuses, as usage errors, what no run could ever call: a blank flag, a missing tool, a misplaced flag. */
export function checkBlanks(query: {
  readonly tool?: string | undefined;
  readonly argv?: readonly string[] | undefined;
  readonly path?: string | undefined;
}): void {
  if (query.tool === '')
    throw new FabricError('usage', `--tool needs the name of a tool, e.g. --tool write_file. ${HELP}`);
  if (query.path === '')
    throw new FabricError(
      'usage',
      `--path needs a path, relative to the workspace (e.g. --path src/main.rs). ${HELP}`,
    );
  if (query.argv?.[0] === '')
    throw new FabricError(
      'usage',
      `The command after -- starts with an empty word: name the program first, e.g. \`-- cargo tree\`. ${HELP}`,
    );
}

/** Refuses a tool the specialist does not offer, and a command or path the tool does not take. */
export function checkCall(specialist: string, query: CallQuery, offered: OfferedTools): void {
  const { tool } = query;
  const names = [...offered.tools.keys()];
  const pathTools = names.filter((name) => offered.tools.get(name)?.path);
  const mcp = offered.mcpPrefixes.some((prefix) => tool.startsWith(prefix));
  const known = offered.tools.get(tool);
  if (known === undefined && !mcp) {
    const servers = offered.mcpPrefixes.map((prefix) => `${prefix}*`);
    throw new FabricError(
      'usage',
      `Specialist ${specialist} offers no tool "${tool}": its tools are ${[...names, ...servers].join(', ') || '(none)'}.` +
        `${didYouMean(tool, names)} ${HELP}`,
    );
  }
  if (query.argv !== undefined && tool !== COMMAND_TOOL) {
    const instead =
      known?.path === true ? ` ${tool} takes --path PATH instead.` : ` ${tool} takes no command.`;
    throw new FabricError(
      'usage',
      `A command after -- goes with the ${COMMAND_TOOL} tool only (--tool ${COMMAND_TOOL}, the default with a command).${instead} ${HELP}`,
    );
  }
  if (query.path !== undefined && (tool === COMMAND_TOOL || known?.path === false)) {
    const which =
      tool === COMMAND_TOOL
        ? `the ${COMMAND_TOOL} tool is decided by its command: put it after --`
        : `${tool} takes no path`;
    throw new FabricError(
      'usage',
      `--path goes with a tool that takes a path (${pathTools.join(', ') || 'none here'}); ${which}. ${HELP}`,
    );
  }
}

/**
 * Why the tool would refuse the path, as the file tools confine it to the workspace (outside it,
 * through a link out of it, the run record, a toolchain file): undefined when it would not, or
 * when the tool is none of the pack's own file tools.
 */
export async function pathRefusal(
  config: FabricConfig,
  specialist: string,
  query: CallQuery,
  offered: OfferedTools,
): Promise<string | undefined> {
  const known = offered.tools.get(query.tool);
  const workspace = config.specialists[specialist]?.workspace;
  if (query.path === undefined || known?.path !== true || workspace === undefined) return undefined;
  const root = await realpath(workspace);
  const scope = await PathScope.create(root, await recordPathsIn(root, settingsOf(config)));
  try {
    await (known.reads ? scope.forRead(query.path) : scope.forWrite(query.path));
    return undefined;
  } catch (error) {
    // A file that does not exist yet is the tool's answer, not a refusal.
    if (error instanceof ToolError && error.securityEvent !== undefined) return error.message;
    if (error instanceof ToolError) return undefined;
    throw error;
  }
}

/** Whether the tool only reads (its effect class), so its path is checked as a read; else as a write. */
function readsOnly(tool: Tool): boolean {
  try {
    return effectOf(tool, { path: '.' }) === 'read';
  } catch {
    return false;
  }
}

/** The settings a run's packs get: the run record and the config in use are out of reach (SPEC §6). */
function settingsOf(config: FabricConfig): FabricSettings {
  return { searxngUrl: config.search.searxng_url, runsDir: config.runs_dir, configFile: config.source };
}
