import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Handler } from 'hono';
import type { Fabric } from '../../composition/fabric.ts';
import { type FabricMcpServices, createFabricMcpServer } from '../mcp/fabric-mcp-server.ts';
import { type RunHub, liveRuns } from './run-hub.ts';

/**
 * `/mcp`: the same MCP server as `fabric mcp`, over streamable HTTP in stateless mode: a server
 * and a transport per request (the SDK forbids reusing a stateless transport). Runs it starts
 * or resumes go through the hub, so they are listed, followable and cancelled on shutdown like the others.
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
  return async (c) => {
    const server = createFabricMcpServer(services, { log: (line) => log(`mcp: ${line}`) });
    const transport = new WebStandardStreamableHTTPServerTransport({}); // no session id generator: stateless
    await server.connect(transport);
    const response = await transport.handleRequest(c.req.raw);
    return closingWhenDone(response, () => {
      // Closing aborts the request handlers still running: a client that hangs up cancels its run_task.
      server.close().catch(() => {});
    });
  };
}

/** The same response, calling `onDone` once its body has been sent or the client went away. */
function closingWhenDone(response: Response, onDone: () => void): Response {
  const body = response.body;
  if (body === null) {
    onDone();
    return response;
  }
  const reader = body.getReader();
  const wrapped = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        onDone();
      } else {
        controller.enqueue(value);
      }
    },
    cancel(reason) {
      reader.cancel(reason).catch(() => {});
      onDone();
    },
  });
  return new Response(wrapped, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
