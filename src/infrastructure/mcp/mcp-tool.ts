import type { Tool, Validation } from '../../application/ports.ts';
import type { EffectClass } from '../../domain/effects.ts';
import type { McpSession, McpToolInfo } from './mcp-session.ts';
import { mapToolResult } from './result-mapping.ts';
import { toCompatibleToolSchema } from './schema-compat.ts';

/** OpenAI function names: letters, digits, `_` and `-`, at most 64 characters. */
const MAX_NAME = 64;

/** The name the model sees for a server's tool: `mcp__<server>__<tool>`, made a valid function name. */
export function namespacedToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, MAX_NAME);
}

/**
 * A pack tool that forwards to an MCP server. Arguments are checked only for shape (an object
 * with the schema's required keys): the server owns its schema and its answer to a bad call
 * comes back to the model like any tool error. `taken` holds the names already in use, so a
 * clash after sanitising gets a numbered suffix rather than shadowing another tool.
 */
export function mcpTool(session: McpSession, info: McpToolInfo, taken: Set<string>): Tool {
  const name = uniqueName(namespacedToolName(session.server, info.name), taken);
  const parameters = toCompatibleToolSchema(info.inputSchema);
  const required = Array.isArray(parameters.required)
    ? parameters.required.filter((key): key is string => typeof key === 'string')
    : [];
  const label = `MCP tool ${info.name} (server "${session.server}")`;
  return {
    spec: {
      name,
      description:
        info.description === '' ? `${info.name} from MCP server "${session.server}".` : info.description,
      parameters,
    },
    effect: mcpEffect(info),
    validate: (args): Validation<unknown> => {
      if (args === null || typeof args !== 'object' || Array.isArray(args)) {
        return { ok: false, message: 'the arguments must be a JSON object' };
      }
      const missing = required.filter((key) => !(key in args));
      if (missing.length > 0) {
        return { ok: false, message: missing.map((key) => `"${key}" is required`).join('; ') };
      }
      return { ok: true, value: args };
    },
    run: async (args, context) =>
      mapToolResult(
        await session.callTool(info.name, args as Record<string, unknown>, context.signal),
        label,
      ),
  };
}

function uniqueName(base: string, taken: Set<string>): string {
  let name = base;
  for (let n = 2; taken.has(name); n += 1) {
    const suffix = `_${n}`;
    name = `${base.slice(0, MAX_NAME - suffix.length)}${suffix}`;
  }
  taken.add(name);
  return name;
}

/**
 * A server's tool is `external` unless its annotations say otherwise (SPEC §18): `readOnlyHint`
 * makes it `read`, `idempotentHint` `idempotent`. Hints are the server's word, as MCP says; a
 * server that claims too much is trusted as any configured server is.
 */
export function mcpEffect(info: McpToolInfo): EffectClass {
  if (info.annotations?.readOnlyHint === true) return 'read';
  if (info.annotations?.idempotentHint === true) return 'idempotent';
  return 'external';
}
