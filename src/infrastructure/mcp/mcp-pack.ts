import {
  type FinishGate,
  type GateResult,
  type SpecialistPack,
  type Tool,
  type ToolContext,
  hasFinishGate,
} from '../../application/ports.ts';
import type { McpServerConfig } from '../../config/schema.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { lazy } from '../lazy-import.ts';
import { mcpTool } from './mcp-tool.ts';
import type { McpSession, McpSessionSettings } from './mcp-session.ts';

/**
 * A pack with MCP servers attached: the inner pack's tools plus every server's tools, named
 * `mcp__<server>__<tool>`. `open` starts the servers; `close` ends every session that was
 * started, even when `open` failed halfway, and one failing close never stops the others.
 */
/** The MCP SDK (with zod and ajv, ~200 modules), loaded by the first pack that has servers. */
const loadMcpSession = lazy(() => import('./mcp-session.ts'));

export class McpPack implements SpecialistPack {
  readonly #inner: SpecialistPack;
  readonly #servers: Readonly<Record<string, McpServerConfig>>;
  readonly #settings: McpSessionSettings;
  readonly #sessions: McpSession[] = [];
  #tools: readonly Tool[] = [];

  constructor(
    inner: SpecialistPack,
    servers: Readonly<Record<string, McpServerConfig>>,
    settings: McpSessionSettings,
  ) {
    this.#inner = inner;
    this.#servers = servers;
    this.#settings = settings;
  }

  get name(): string {
    return this.#inner.name;
  }

  get systemPrompt(): string {
    return this.#inner.systemPrompt;
  }

  get finish(): SpecialistPack['finish'] {
    return this.#inner.finish;
  }

  /** The pids of the stdio servers started so far: for tests and diagnostics. */
  get pids(): readonly number[] {
    return this.#sessions.flatMap((session) => (session.pid === undefined ? [] : [session.pid]));
  }

  async open(signal: AbortSignal): Promise<void> {
    await this.#inner.open(signal);
    const { McpSession } = await loadMcpSession();
    if (signal.aborted) throw signal.reason;
    const sessions = Object.entries(this.#servers).map(
      ([server, config]) => new McpSession(server, config, this.#settings),
    );
    // Registered before connecting, so close() reaches a server whose start is still pending.
    this.#sessions.push(...sessions);
    const started = await Promise.allSettled(sessions.map((session) => session.connect(signal)));
    if (signal.aborted) throw signal.reason;
    const failures = started.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    if (failures.length > 0) {
      const first = failures[0];
      if (failures.length === 1 && first instanceof FabricError) throw first;
      throw new FabricError(
        'pack_load_failed',
        `Specialist "${this.name}": ${failures.map((failure) => errorMessage(failure)).join(' ')}`,
        { cause: first },
      );
    }
    const taken = new Set(this.#inner.tools().map((tool) => tool.spec.name));
    const tools: Tool[] = [];
    for (const session of sessions) {
      for (const info of await session.listTools(signal)) {
        tools.push(mcpTool(session, info, taken));
      }
    }
    this.#tools = tools;
  }

  tools(): readonly Tool[] {
    return [...this.#inner.tools(), ...this.#tools];
  }

  async close(): Promise<void> {
    const sessions = this.#sessions.splice(0);
    this.#tools = [];
    await Promise.allSettled([
      Promise.resolve()
        .then(() => this.#inner.close())
        .catch(() => {}),
      ...sessions.map((session) => session.close()),
    ]);
  }
}

/** An `McpPack` whose inner pack has a finish gate: the gate is kept. */
class GatedMcpPack extends McpPack implements FinishGate {
  readonly #gate: FinishGate;

  constructor(
    inner: SpecialistPack & FinishGate,
    servers: Readonly<Record<string, McpServerConfig>>,
    settings: McpSessionSettings,
  ) {
    super(inner, servers, settings);
    this.#gate = inner;
  }

  checkFinish(payload: Record<string, unknown>, context: ToolContext): Promise<GateResult> {
    return this.#gate.checkFinish(payload, context);
  }
}

/** Attaches MCP servers to a pack, keeping its finish gate when it has one. */
export function attachMcpServers(
  pack: SpecialistPack,
  servers: Readonly<Record<string, McpServerConfig>>,
  settings: McpSessionSettings,
): McpPack {
  return hasFinishGate(pack)
    ? new GatedMcpPack(pack, servers, settings)
    : new McpPack(pack, servers, settings);
}
