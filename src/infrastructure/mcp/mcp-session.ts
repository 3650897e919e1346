import { isAbsolute, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../../config/schema.ts';
import { FabricError, ToolError, errorMessage } from '../../domain/errors.ts';
import type { McpCallResult } from './result-mapping.ts';
import { ProcessGroupStdioTransport, type StdioLaunch } from './stdio-transport.ts';

/** What a session needs besides the server's own config entry. */
export interface McpSessionSettings {
  /** The environment stdio servers start from (PATH and HOME); the entry's `env` is added to it. */
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Where a stdio server runs when its entry has no `cwd`: the workspace, else the config's directory. */
  readonly defaultCwd: string;
  /** What a relative `cwd` is resolved against: the config file's directory. */
  readonly baseDir: string;
  readonly clientVersion: string;
  /** Bound on one tool call; progress notifications from the server extend it. */
  readonly callTimeoutMs: number;
  /** Bound on starting a server and the initialize handshake. */
  readonly connectTimeoutMs: number;
  /** Rewrites a stdio launch, e.g. to run it inside the OS sandbox. */
  readonly wrapLaunch?: ((launch: StdioLaunch) => Promise<StdioLaunch>) | undefined;
}

/** A tool as an MCP server lists it. */
export interface McpToolInfo {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: unknown;
  /** The server's hints (MCP tool annotations): what calling the tool does. */
  readonly annotations?: { readonly readOnlyHint?: boolean; readonly idempotentHint?: boolean };
}

type State = 'new' | 'open' | 'lost' | 'closed';

/** One connection to one MCP server, stdio or streamable HTTP, for the length of a run. */
export class McpSession {
  readonly server: string;
  readonly #config: McpServerConfig;
  readonly #settings: McpSessionSettings;
  readonly #client: Client;
  #transport: Transport | undefined;
  #state: State = 'new';

  constructor(server: string, config: McpServerConfig, settings: McpSessionSettings) {
    this.server = server;
    this.#config = config;
    this.#settings = settings;
    this.#client = new Client({ name: 'agent-fabric', version: settings.clientVersion });
    // A crash or a dropped connection: later calls fail as tool errors instead of hanging.
    this.#client.onclose = () => {
      if (this.#state === 'open') this.#state = 'lost';
    };
  }

  /** The stdio server's pid once started (undefined for HTTP servers). */
  get pid(): number | undefined {
    return this.#transport instanceof ProcessGroupStdioTransport ? this.#transport.pid : undefined;
  }

  /** Starts the server (stdio) or opens the connection (HTTP) and runs the initialize handshake. */
  async connect(signal: AbortSignal): Promise<void> {
    try {
      this.#transport = await this.#createTransport();
      await this.#client.connect(this.#transport, { signal, timeout: this.#settings.connectTimeoutMs });
      this.#state = 'open';
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw new FabricError(
        'pack_load_failed',
        `MCP server "${this.server}" (${this.#describe()}) failed to start: ${errorMessage(error)}${this.#stderr()}`,
        { cause: error },
      );
    }
  }

  /** Every tool the server offers (all pages). */
  async listTools(signal: AbortSignal): Promise<readonly McpToolInfo[]> {
    if (!this.#client.getServerCapabilities()?.tools) return [];
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#client.listTools(cursor === undefined ? {} : { cursor }, {
        signal,
        timeout: this.#settings.connectTimeoutMs,
      });
      for (const tool of page.tools) {
        tools.push({
          name: tool.name,
          description: tool.description ?? '',
          inputSchema: tool.inputSchema,
          ...(tool.annotations === undefined ? {} : { annotations: hintsOf(tool.annotations) }),
        });
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < 10_000);
    return tools;
  }

  /** Calls a tool. Transport and protocol failures throw `ToolError`; cancellation rethrows. */
  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult> {
    if (this.#state !== 'open') {
      throw new ToolError(
        `MCP server "${this.server}" is no longer running, so its tools cannot be used in this run${this.#stderr()}.`,
      );
    }
    // The SDK adds an 'abort' listener to the signal it is given and never removes it. The run's
    // signal lives as long as the run, so each call would leave one (and the request it holds)
    // behind: MaxListenersExceededWarning after ten calls. The SDK gets a signal of its own per
    // call, which the run's signal aborts through a listener removed when the call ends.
    const call = new AbortController();
    const forward = (): void => call.abort(signal.reason);
    if (signal.aborted) call.abort(signal.reason);
    else signal.addEventListener('abort', forward, { once: true });
    try {
      return (await this.#client.callTool({ name, arguments: args }, undefined, {
        signal: call.signal,
        timeout: this.#settings.callTimeoutMs,
        // Asking for progress lets a long tool keep its call alive by reporting it.
        onprogress: () => {},
        resetTimeoutOnProgress: true,
      })) as McpCallResult;
    } catch (error) {
      if (signal.aborted) throw error;
      // The state may have changed while the call was pending (the client's onclose).
      const lost = (this.#state as State) === 'lost' ? ` The server exited${this.#stderr()}.` : '';
      throw new ToolError(`MCP server "${this.server}" failed on ${name}: ${errorMessage(error)}.${lost}`, {
        cause: error,
      });
    } finally {
      signal.removeEventListener('abort', forward);
    }
  }

  /** Closes the connection and ends the server's processes. Never throws; safe to call twice. */
  async close(): Promise<void> {
    this.#state = 'closed';
    const transport = this.#transport;
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
      // Polite, bounded: tell the server the session is over.
      await Promise.race([transport.terminateSession().catch(() => {}), delay(1000)]);
    }
    await this.#client.close().catch(() => {});
    // The client only closes a transport it finished connecting; a half-started one is ours.
    await transport?.close().catch(() => {});
  }

  async #createTransport(): Promise<Transport> {
    const config = this.#config;
    if ('url' in config) {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: { ...config.headers } },
      });
    }
    const { baseEnv, baseDir, defaultCwd, wrapLaunch } = this.#settings;
    const cwd =
      config.cwd === undefined
        ? defaultCwd
        : isAbsolute(config.cwd)
          ? config.cwd
          : resolve(baseDir, config.cwd);
    const launch: StdioLaunch = {
      command: config.command,
      args: config.args,
      env: { ...baseEnv, ...config.env },
      cwd,
    };
    return new ProcessGroupStdioTransport(wrapLaunch ? await wrapLaunch(launch) : launch);
  }

  #describe(): string {
    const config = this.#config;
    return 'url' in config ? config.url : [config.command, ...config.args].join(' ');
  }

  #stderr(): string {
    const tail = this.#transport instanceof ProcessGroupStdioTransport ? this.#transport.stderrTail : '';
    return tail === '' ? '' : ` (its stderr: ${tail.slice(-500)})`;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref?.());
}

/** The annotations that say what a call does, kept only when the server set them to booleans. */
function hintsOf(annotations: { readonly readOnlyHint?: unknown; readonly idempotentHint?: unknown }) {
  return {
    ...(typeof annotations.readOnlyHint === 'boolean' ? { readOnlyHint: annotations.readOnlyHint } : {}),
    ...(typeof annotations.idempotentHint === 'boolean'
      ? { idempotentHint: annotations.idempotentHint }
      : {}),
  };
}
