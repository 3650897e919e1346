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
import {
  AnswerApprovalInput,
  FABRIC_TOOLS,
  GetRunInput,
  ListApprovalsInput,
  ResumeRunInput,
  RunTaskInput,
} from './fabric-tools.ts';
import type { ApprovalStore } from '../../application/approvals/approval-store.ts';
import { answerApproval } from '../../application/approvals/answer-approval.ts';
import {
  MCP_CHANNEL,
  type McpApprovalOptions,
  approvalView,
  mcpApprovalOptions,
  parkedText,
} from './mcp-approvals.ts';
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
  /** Where `answer_approval` and `list_approvals` read and answer approvals (SPEC §19). */
  readonly approvals: ApprovalStore;
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
    // Known once the client initialized: whether it can be asked (elicitation) or gets the approval back.
    const context = () => ({
      signal: extra.signal,
      progressToken: request.params._meta?.progressToken,
      notify: extra.sendNotification,
      log,
      approvals: mcpApprovalOptions(server, extra.requestId),
      client: server.getClientVersion()?.name,
    });
    try {
      switch (request.params.name) {
        case 'run_task':
          return await runTask(fabric, args, context());
        case 'resume_run':
          return await resumeRunTool(fabric, args, context());
        case 'answer_approval':
          return await answerApprovalTool(fabric, args, context());
        case 'list_approvals': {
          const input = validateWith(ListApprovalsInput, args);
          if (!input.ok) return failure(`Invalid arguments for list_approvals: ${input.message}.`);
          const state = input.value.state ?? 'pending';
          const records = await fabric.approvals.list({
            state: state === 'all' ? undefined : state,
            runId: input.value.run_id,
          });
          return structured({ approvals: records.map(approvalView) });
        }
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
    approvals: McpApprovalOptions;
    client: string | undefined;
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
    ...context.approvals,
  });
  context.log(`run ${result.run_id} ${result.status} (${plural(result.steps, 'step')}): ${result.runlog}`);
  await sent();
  return runOutcome(fabric, result);
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
    ...context.approvals,
  });
  context.log(`run ${result.run_id} ${result.status} (${plural(result.steps, 'step')}): ${result.runlog}`);
  await sent();
  return runOutcome(fabric, result);
}

/**
 * `answer_approval`: answers through the one use case (channel `mcp`), then goes on with the
 * parked run to its end, as resume_run does; a further approval parks it again at once.
 */
async function answerApprovalTool(
  fabric: FabricMcpServices,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<CallToolResult> {
  const input = validateWith(AnswerApprovalInput, args);
  if (!input.ok) return failure(`Invalid arguments for answer_approval: ${input.message}.`);
  const { approval_id, decision, scope, pattern, message } = input.value;
  const record = await answerApproval(
    fabric.approvals,
    approval_id,
    {
      decision,
      scope,
      pattern,
      message,
      channel: MCP_CHANNEL,
      ...(context.client === undefined ? {} : { by: `MCP client ${context.client}` }),
    },
    new Date(),
  );
  context.log(`approval ${record.id} ${record.state} for run ${record.run_id}`);
  const run = await fabric.runs.show(record.run_id).catch(() => undefined);
  const waiting = await fabric.approvals.list({ runId: record.run_id, state: 'pending' });
  if (run?.status !== 'awaiting_approval' || waiting.length > 0) {
    // The run waits in its own process (a terminal, a worker), or for another approval too.
    const why =
      waiting.length > 0
        ? `run ${record.run_id} waits for approval ${waiting[0]!.id} too; answer it and the run goes on.`
        : `run ${record.run_id} is ${run?.status ?? 'unknown here'}: it goes on where it waits, not here.`;
    return {
      content: [{ type: 'text', text: `Approval ${record.id} ${record.state}; ${why}` }],
      structuredContent: { approval: approvalView(record) },
    };
  }
  try {
    return await resumeRunTool(fabric, { run_id: record.run_id }, context);
  } catch (error) {
    // A server that saw the answer first resumed it (SPEC §19): it goes on there, not twice; the
    // OpenSpec daemon's run goes on in the daemon, which holds its edits.
    const reason =
      error instanceof FabricError && error.code === 'run_not_resumable' ? error.details.reason : undefined;
    if (reason !== 'alive' && reason !== 'resumer') throw error;
    const where = reason === 'alive' ? 'in its server' : 'in the OpenSpec daemon that started it';
    return {
      content: [
        {
          type: 'text',
          text: `Approval ${record.id} ${record.state}; run ${record.run_id} goes on ${where}.`,
        },
      ],
      structuredContent: { approval: approvalView(record) },
    };
  }
}

/** The RunResult; a parked run's approval in full, with how to answer it. */
async function runOutcome(fabric: FabricMcpServices, result: RunResult): Promise<CallToolResult> {
  const pending = result.approval === undefined ? undefined : await fabric.approvals.get(result.approval.id);
  if (result.status !== 'awaiting_approval' || pending === undefined)
    return {
      content: [{ type: 'text', text: JSON.stringify(result, null, 2) }],
      structuredContent: { ...result },
    };
  const view = { ...result, approval: approvalView(pending) };
  return {
    content: [
      { type: 'text', text: parkedText(pending) },
      { type: 'text', text: JSON.stringify(view, null, 2) },
    ],
    structuredContent: view,
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
