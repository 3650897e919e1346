/**
 * The one script every contender runs: `convert_units` on every step but the last, then
 * `finish_task`. The prompt and tool schemas are the fabric's own, taken from its first request.
 */
import type { FakeModel, ScriptedTurn } from '../../test/support/fake-llm-server.ts';

export const MODEL_ID = 'bench-model';

/**
 * The benches' model, loaded at a window no bench run fills: they time the loop, the mirror or the
 * queue, not compaction (a 50-step run at the fake's default 4,096 would be summarised once, and
 * the summary would take a scripted turn). The cache bench loads its own at 8k to compact.
 */
export const BENCH_MODEL: FakeModel = { id: MODEL_ID, toolUse: true, contextLength: 131_072 };
export const TASK = 'Convert 1 km to metres, one step at a time.';

export const CONVERT_ARGS = { value: 1, from: 'km', to: 'm' };
export const FINISH_ARGS = { summary: 'done', answer: '1000 m' };

export const CONVERT_TURN: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'convert_units', arguments: CONVERT_ARGS }] },
};
export const FINISH_TURN: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: FINISH_ARGS }] },
};

/** `steps` model turns: `steps - 1` conversions, then `finish_task`. */
export function unitsScript(steps: number): ScriptedTurn[] {
  return [...Array.from({ length: steps - 1 }, () => CONVERT_TURN), FINISH_TURN];
}

/** The bare loops' `convert_units`: what the pack's tool answers for lengths, without validation. */
export function convertUnits(args: { value: number; from: string; to: string }): string {
  const metres: Record<string, number> = { mm: 0.001, cm: 0.01, m: 1, km: 1000 };
  const from = metres[args.from];
  const to = metres[args.to];
  if (from === undefined || to === undefined) throw new Error(`bench: cannot convert ${args.from}`);
  return `${args.value} ${args.from} = ${(args.value * from) / to} ${args.to}`;
}

/** A tool as the OpenAI chat API takes it. */
export interface WireTool {
  readonly type: 'function';
  readonly function: { readonly name: string; readonly description: string; readonly parameters: object };
}

/** What every contender sends: the fabric's system prompt and tools for the `units` specialist. */
export interface ChatShape {
  readonly model: string;
  readonly system: string;
  readonly task: string;
  readonly tools: readonly WireTool[];
}

/** Reads the system prompt and tools out of the body of the fabric's first chat request. */
export function shapeOf(requestBody: unknown): ChatShape {
  const body = requestBody as
    | { messages?: { role: string; content: string }[]; tools?: WireTool[] }
    | undefined;
  const system = body?.messages?.find((m) => m.role === 'system')?.content;
  const tools = body?.tools;
  if (system === undefined || tools === undefined || tools.length !== 2)
    throw new Error(`bench: the fabric's first request has no system prompt or not two tools`);
  return { model: MODEL_ID, system, task: TASK, tools };
}

/** A tool's JSON schema by name. */
export function schemaOf(shape: ChatShape, name: string): WireTool['function'] {
  const tool = shape.tools.find((t) => t.function.name === name);
  if (!tool) throw new Error(`bench: no tool ${name} in the fabric's request`);
  return tool.function;
}
