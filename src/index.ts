/** The public surface of agent-fabric, for custom packs and embedding. */
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
  Validation,
} from './application/ports.ts';
export { executeTask, type ExecuteTaskInput } from './application/execute-task.ts';
export { type FabricConfig, loadConfig } from './config/load.ts';
export { FabricError, ToolError, type FabricErrorCode, type SecurityEventDetails } from './domain/errors.ts';
export type { ChatMessage, JsonSchema, ToolCall, ToolSpec } from './domain/messages.ts';
export type { RunEvent, RunEventKind } from './domain/run-events.ts';
export type { RunResult, RunStatus } from './domain/run-result.ts';
export { createStaticPack } from './infrastructure/packs/base-pack.ts';
export { defineFinish, defineTool } from './infrastructure/packs/define-tool.ts';
export { createFabric, Fabric, type FabricOptions, type RunRequest } from './interfaces/compose.ts';
