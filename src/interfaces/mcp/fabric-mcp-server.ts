import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  type CallToolResult,
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { ModelCatalog, SpecialistRegistry } from '../../application/ports.ts';
import type { RunReadModel } from '../../application/runs/run-read-model.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import type { ResumeRequest } from '../../application/run/resume-run.ts';
import type { RunResult } from '../../domain/run-result.ts';
import { validateWith } from '../../config/schema-tools.ts';
import type { RunRequest } from '../../application/run/run-request.ts';
import { FABRIC_VERSION } from '../../composition/version.ts';
import { FABRIC_TOOLS, GetRunInput, ResumeRunInput, RunTaskInput } from './fabric-tools.ts';
import { progressObserver } from './run-progress.ts';
import { mcpRunSummary } from './get-run-view.ts';
import { plural } from '../../domain/words.ts';

/** What the MCP server uses of the fabric (a `Fabric` satisfies it). */
export interface FabricMcpServices {
  run(request: RunRequest): Promise<RunResult>;
  /** Goes on with a run its process left (SPEC §18); refusals throw `run_not_resumable`. */
  resume(request: ResumeRequest): Promise<RunResult>;
  readonly registry: Pick<SpecialistRegistry, 'list'>;
  /** Where `get_run` finds a run: its runlog, or the control plane (a worker's, a queued one). */
  readonly runs: Pick<RunReadModel, 'show'>;
  readonly catalog: ModelCatalog;
}

export interface FabricMcpServerOptions {
  /** Diagnostics (runs started and ended); never stdout, which belongs to the protocol on stdio. */
  readonly log?: (line: string) => void;
}

type Notify = (notification: ServerNotification) => Promise<void>;

/**
 * The fabric as an MCP server: `run_task`, `resume_run`, `list_specialists`, `get_run`, `list_models`.
 * Transport-agnostic: `fabric mcp` connects it to stdio, and an HTTP API can mount the same
 * server over streamable HTTP. The low-level `Server` is used because the tools' schemas are
 * JSON schemas derived from valibot, not zod.
 */
export function createFabricMcpServer(
  fabric: FabricMcpServices,
  options: FabricMcpServerOptions = {},
): Server {
  const log = options.log ?? (() => {});
  const server = new Server(
    { name: 'agent-fabric', version: FABRIC_VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'agent-fabric runs tasks with specialist agents on local models. Call list_specialists, then run_task with a specialist and a task; get_run reads a finished run back.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: FABRIC_TOOLS as unknown as Tool[] }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    try {
      switch (request.params.name) {
        case 'run_task':
          return await runTask(fabric, args, {
            signal: extra.signal,
            progressToken: request.params._meta?.progressToken,
            notify: extra.sendNotification,
            log,
          });
        case 'resume_run':
          return await resumeRunTool(fabric, args, {
            signal: extra.signal,
            progressToken: request.params._meta?.progressToken,
            notify: extra.sendNotification,
            log,
          });
        case 'list_specialists':
          return structured({ specialists: fabric.registry.list() });
        case 'get_run': {
          const input = validateWith(GetRunInput, args);
          if (!input.ok) return failure(`Invalid arguments for get_run: ${input.message}.`);
          return structured(mcpRunSummary(await fabric.runs.show(input.value.run_id)));
        }
        case 'list_models':
          return structured({ backends: await fabric.catalog.probe(extra.signal) });
        default:
          throw new McpError(
            ErrorCode.InvalidParams,
            `Unknown tool "${request.params.name}". Tools: ${FABRIC_TOOLS.map((tool) => tool.name).join(', ')}.`,
          );
      }
    } catch (error) {
      if (error instanceof McpError) throw error;
      // Expected failures (unknown specialist, no model, unknown run, a refused resume) are tool
      // errors the caller can read, a fabric error's code first.
      return failure(error instanceof FabricError ? `${error.code}: ${error.message}` : errorMessage(error));
    }
  });
  return server;
}

async function runTask(
  fabric: FabricMcpServices,
  args: Record<string, unknown>,
  context: {
    signal: AbortSignal;
    progressToken: string | number | undefined;
    notify: Notify;
    log: (line: string) => void;
  },
): Promise<CallToolResult> {
  const input = validateWith(RunTaskInput, args);
  if (!input.ok) return failure(`Invalid arguments for run_task: ${input.message}.`);
  const { specialist, task, workspace, model, max_steps } = input.value;
  const { report, sent } = progressReporter(context);
  context.log(`run_task: ${specialist}: ${task.length > 80 ? `${task.slice(0, 80)}…` : task}`);
  const result = await fabric.run({
    specialist,
    task,
    workspace,
    model,
    maxSteps: max_steps,
    observers: [progressObserver(report)],
    signal: context.signal,
    onModelChosen: (choice) => report(`model: ${choice.model.id} (${choice.reason})`),
    onNotice: (message) => context.log(message),
  });
  context.log(`run ${result.run_id} ${result.status} (${plural(result.steps, 'step')}): ${result.runlog}`);
  await sent();
  return {
    content: [{ type: 'text', text: JSON.stringify(result, null, 2) }],
    structuredContent: { ...result },
  };
}

type ToolContext = Parameters<typeof runTask>[2];

/** `resume_run`: `fabric resume` over MCP, with run_task's progress. */
async function resumeRunTool(
  fabric: FabricMcpServices,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<CallToolResult> {
  const input = validateWith(ResumeRunInput, args);
  if (!input.ok) return failure(`Invalid arguments for resume_run: ${input.message}.`);
  const { report, sent } = progressReporter(context);
  context.log(`resume_run: ${input.value.run_id}`);
  const result = await fabric.resume({
    run: input.value.run_id,
    moreSteps: input.value.max_steps,
    force: input.value.force === true,
    observers: [progressObserver(report)],
    signal: context.signal,
    onNotice: (message) => context.log(message),
  });
  context.log(`run ${result.run_id} ${result.status} (${plural(result.steps, 'step')}): ${result.runlog}`);
  await sent();
  return {
    content: [{ type: 'text', text: JSON.stringify(result, null, 2) }],
    structuredContent: { ...result },
  };
}

/**
 * Progress notifications for a request that carries a progressToken. They are sent as events
 * come; `sent` waits for the last of them, so a client never sees the result before the run's
 * final progress (its `run_end`).
 */
function progressReporter(context: Pick<ToolContext, 'progressToken' | 'notify'>) {
  let progress = 0;
  let sent: Promise<unknown> = Promise.resolve();
  const report = (message: string): void => {
    const { progressToken } = context;
    if (progressToken === undefined) return;
    progress += 1;
    const notification = context
      .notify({ method: 'notifications/progress', params: { progressToken, progress, message } })
      .catch(() => {});
    sent = Promise.all([sent, notification]);
  };
  return { report, sent: () => sent };
}

function structured(value: object): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
    structuredContent: { ...value } as Record<string, unknown>,
  };
}

function failure(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}
