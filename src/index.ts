/**
 * The public surface of agent-fabric, for custom packs and embedding (docs/packs.md). Errors are
 * recognised by a brand every copy of the package shares, so a pack that imported another copy
 * still throws the runtime's `ToolError`.
 */
export type {
  BackendKind,
  ChatClient,
  FinishGate,
  FinishSpec,
  GateResult,
  PackBuildContext,
  PackBuilder,
  RunLogStore,
  RunObserver,
  SpecialistPack,
  Tool,
  ToolContext,
  ToolOutput,
  Validation,
  FabricSettings,
} from './application/ports.ts';
export type { SpecialistConfig } from './config/schema.ts';
export { executeTask, type ExecuteTaskInput } from './application/run/execute-task.ts';
export { type FabricConfig, loadConfig } from './config/load.ts';
export { FabricError, ToolError, type FabricErrorCode, type SecurityEventDetails } from './domain/errors.ts';
export type { ChatMessage, JsonSchema, ToolCall, ToolSpec } from './domain/messages.ts';
export type { RunEvent, RunEventKind } from './domain/run-events.ts';
export type { RunResult, RunStatus } from './domain/run-result.ts';
export { createStaticPack } from './infrastructure/packs/base-pack.ts';
export { definePack } from './infrastructure/packs/define-pack.ts';
/** valibot, the fabric's own copy: tool and finish schemas, without installing it beside a pack. */
export * as v from 'valibot';
export { defineFinish, defineTool } from './infrastructure/packs/define-tool.ts';
export {
  RunReadModel,
  type RunFilter,
  type RunPage,
} from './application/runs/run-read-model.ts';
export type { RunRecord, RunRecordStatus } from './application/runs/run-record.ts';
export {
  createFabric,
  Fabric,
  type FabricOptions,
  type RunReadModelOptions,
} from './composition/fabric.ts';
export type { RunRequest } from './application/run/run-request.ts';
