import process from 'node:process';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { loadConfig } from '../../../config/load.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { type FabricMcpServices, createFabricMcpServer } from '../../mcp/fabric-mcp-server.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

export const MCP_HELP = `Usage: fabric mcp [--config FILE]

Serves the fabric as an MCP server over stdio, so any MCP client (Claude Desktop, an IDE, an
agent) can use its specialists. stdout carries only MCP messages; diagnostics go to stderr.

Tools:
  run_task          run a task with a specialist (specialist, task, workspace?, model?,
                    max_steps?); returns the RunResult, with a progress notification per step
                    and tool call when the request has a progressToken; cancelling cancels the run
  resume_run        go on with a run (run_id, max_steps?, force?), as fabric resume
  answer_approval   answer the approval a parked run waits for (approval_id, decision,
                    scope?, pattern?, message?), then go on with the run; returns its result
  list_approvals    approvals (state?: pending by default, run_id?)
  list_specialists  the configured specialists
  get_run           a run's summary from its runlog (run_id)
  list_models       what every configured backend has

A call a policy rule says "ask" about: a client that declared MCP elicitation is asked inside
the call; any other gets the run back at once, status awaiting_approval with the approval's id,
and answers it with answer_approval. An MCP call never waits on an approval nobody sees.

Options:
  -c, --config FILE   the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
  -h, --help          show this help

Add it to an MCP client's configuration (Claude Desktop: claude_desktop_config.json; most
clients take the same "mcpServers" shape):

  {
    "mcpServers": {
      "agent-fabric": {
        "command": "fabric",
        "args": ["mcp", "--config", "/path/to/fabric.yaml"],
        "env": {
          "LM_STUDIO_URL": "http://localhost:1234",
          "OLLAMA_HOST": "http://localhost:11434",
          "FABRIC_RUNS_DIR": "/path/to/runs"
        }
      }
    }
  }

"fabric" is the installed package's command (npm install -g); without it, use "command": "node"
with "args": ["/path/to/agent-fabric/bin/fabric.mjs", "mcp", ...]. Not "npx fabric": outside a
project that has agent-fabric installed, npx fetches an unrelated package of that name. Paths in
the config file are relative to it; a specialist with no workspace works in the server's
working directory, so give run_task a workspace or the specialist an absolute one.
`;

/** `fabric mcp`: the fabric as an MCP server on stdio, until stdin closes or the process is told to stop. */
export async function mcpCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs('mcp', argv, {
    config: { type: 'string', short: 'c' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(MCP_HELP);
    return EXIT.ok;
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const fabric = createFabric(config, {
    env: io.env,
    onDegraded: (message) => io.stderr.write(`fabric mcp: ${message}\n`),
  });
  await fabric.controlStore();
  // Runs in flight when the client goes away are cancelled by the SDK; they are awaited so that
  // each one closes its pack (MCP subprocesses) and writes its run_end before the process exits.
  const inflight = new Set<Promise<unknown>>();
  const tracked = <T>(run: Promise<T>): Promise<T> => {
    inflight.add(run);
    run.then(
      () => inflight.delete(run),
      () => inflight.delete(run),
    );
    return run;
  };
  const services: FabricMcpServices = {
    registry: fabric.registry,
    runs: fabric.runReadModel(),
    catalog: fabric.catalog,
    approvals: fabric.approvals,
    resume: (request) => tracked(fabric.resume(request)),
    run: (request) => {
      return tracked(fabric.run(request));
    },
  };
  const server = createFabricMcpServer(services, {
    log: (line) => io.stderr.write(`fabric mcp: ${line}\n`),
  });
  // stdio is the protocol's, so the real process streams are used, not io.stdout.
  const transport = new StdioServerTransport(process.stdin, process.stdout);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  const stop = () => {
    server.close().catch(() => {});
  };
  io.signal.addEventListener('abort', stop, { once: true });
  // The SDK's transport does not notice the client closing stdin; that is how clients say goodbye.
  process.stdin.once('end', stop);
  await server.connect(transport);
  io.stderr.write(`fabric mcp: serving ${config.source} on stdio\n`);
  await closed;
  await Promise.allSettled([...inflight]);
  await fabric.close();
  io.signal.removeEventListener('abort', stop);
  return EXIT.ok;
}
