import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Handler } from 'hono';
import type { Fabric } from '../../composition/fabric.ts';
import { type FabricMcpServices, createFabricMcpServer } from '../mcp/fabric-mcp-server.ts';
import { type RunHub, liveRuns } from './run-hub.ts';

/** A session left without a request this long is closed (its runs, if any, cancelled). */
const SESSION_IDLE_MS = 30 * 60_000;
/** Sessions open at once at most: past it the longest idle is closed for a new one. */
const MAX_SESSIONS = 256;

interface Session {
  readonly server: ReturnType<typeof createFabricMcpServer>;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  seen: number;
  /** Requests being answered now: an idle session with one in flight is kept. */
  busy: number;
}

/**
 * `/mcp`: the same MCP server as `fabric mcp`, over streamable HTTP. A client that initializes
 * gets a session (`Mcp-Session-Id`): its server knows the client's capabilities, so a call that
 * needs approval is asked of a client that declared elicitation, on the call's own response
 * stream (SPEC §19). A request with no session that is not an `initialize` is answered
 * statelessly, by a server and transport of its own (one-shot clients, `curl`). A client that
 * hangs up on a call cancels it. Runs it starts or resumes go through the hub, so they are
 * listed, followable and cancelled on shutdown like the others.
 */
export function mcpHandler(fabric: Fabric, hub: RunHub, log: (line: string) => void): Handler {
  const services: FabricMcpServices = {
    registry: fabric.registry,
    runs: fabric.runReadModel({ live: liveRuns(hub) }),
    catalog: fabric.catalog,
    approvals: fabric.approvals,
    run: (request) => hub.run(request),
    // As POST /v1/runs/:id/resume: through the hub, so the resumed run is listed, followable
    // over SSE and cancelled on shutdown.
    resume: async (request) => {
      const backlog = (await fabric.runLogStore.read(request.run)).events;
      const runId = backlog[0]?.run_id ?? request.run;
      return hub.resumeToEnd(
        runId,
        backlog,
        (observer, signal) =>
          fabric.resume({
            ...request,
            run: runId,
            observers: [observer, ...(request.observers ?? [])],
            signal,
          }),
        request.signal,
      );
    },
  };
  const sessions = new Map<string, Session>();
  const newServer = () => createFabricMcpServer(services, { log: (line) => log(`mcp: ${line}`) });
  const close = (id: string, session: Session) => {
    sessions.delete(id);
    // Closing aborts the request handlers still running: their runs are cancelled.
    session.server.close().catch(() => {});
  };
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, session] of sessions)
      if (session.busy === 0 && now - session.seen > SESSION_IDLE_MS) close(id, session);
  }, 60_000);
  (sweep as { unref?: () => void }).unref?.();

  return async (c) => {
    const id = c.req.header('mcp-session-id');
    if (id !== undefined) {
      const session = sessions.get(id);
      if (session === undefined)
        return c.json(
          {
            jsonrpc: '2.0',
            error: {
              code: -32001,
              message: 'Session not found (the server restarted, or it was idle too long): initialize again.',
            },
            id: null,
          },
          404,
        );
      session.seen = Date.now();
      session.busy += 1;
      const response = await session.transport.handleRequest(c.req.raw).catch((error: unknown) => {
        session.busy -= 1;
        throw error;
      });
      return closingWhenDone(response, (hungUp) => {
        session.busy -= 1;
        session.seen = Date.now();
        // A client that hangs up on a call cancels what it started, as without a session.
        if (hungUp && c.req.method === 'POST') close(id, session);
      });
    }
    if (c.req.method === 'POST' && (await isInitialize(c.req.raw))) {
      if (sessions.size >= MAX_SESSIONS) {
        const idlest = [...sessions]
          .filter(([, s]) => s.busy === 0)
          .sort(([, a], [, b]) => a.seen - b.seen)[0];
        if (idlest !== undefined) close(idlest[0], idlest[1]);
      }
      const server = newServer();
      const transport: WebStandardStreamableHTTPServerTransport =
        new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (opened) => {
            sessions.set(opened, { server, transport, seen: Date.now(), busy: 0 });
          },
          onsessionclosed: (closed) => {
            const session = sessions.get(closed);
            if (session !== undefined) close(closed, session);
          },
        });
      await server.connect(transport);
      return transport.handleRequest(c.req.raw);
    }
    const server = newServer();
    const transport = new WebStandardStreamableHTTPServerTransport({}); // no session id generator: stateless
    await server.connect(transport);
    const response = await transport.handleRequest(c.req.raw);
    return closingWhenDone(response, () => {
      // Closing aborts the request handlers still running: a client that hangs up cancels its run_task.
      server.close().catch(() => {});
    });
  };
}

/** True for a POST whose body is (or, batched, holds) an `initialize` request. */
async function isInitialize(request: Request): Promise<boolean> {
  try {
    const body = (await request.clone().json()) as unknown;
    const messages = Array.isArray(body) ? body : [body];
    return messages.some(
      (message) =>
        typeof message === 'object' &&
        message !== null &&
        (message as { method?: unknown }).method === 'initialize',
    );
  } catch {
    // Not JSON: the stateless transport answers it with the parse error.
    return false;
  }
}

/**
 * The same response, calling `onDone` once its body has been sent (false) or the client went
 * away before its end (true).
 */
function closingWhenDone(response: Response, onDone: (hungUp: boolean) => void): Response {
  const body = response.body;
  if (body === null) {
    onDone(false);
    return response;
  }
  const reader = body.getReader();
  const wrapped = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        onDone(false);
      } else {
        controller.enqueue(value);
      }
    },
    cancel(reason) {
      reader.cancel(reason).catch(() => {});
      onDone(true);
    },
  });
  return new Response(wrapped, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
