/**
 * The same run through two agent frameworks, for comparison: the Vercel AI SDK's tool loop
 * (`streamText` with tools and a step limit) and the OpenAI Agents SDK (a chat-completions
 * model on a custom OpenAI client). Both get the fabric's prompt and tool schemas.
 */
import { defaultMaxListeners, setMaxListeners } from 'node:events';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  Agent,
  OpenAIChatCompletionsModel,
  run,
  setTracingDisabled,
  tool as agentTool,
} from '@openai/agents';
import { hasToolCall, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { type ChatShape, convertUnits, schemaOf } from './units-script.ts';

type ConvertArgs = { value: number; from: string; to: string };
type FinishArgs = { summary: string; answer: string };

/**
 * The Agents SDK's type for a non-strict JSON schema insists on `additionalProperties: true`;
 * the fabric's schemas leave it out, and they are sent as they are.
 */
type NonStrictSchema = {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: true;
};

/** A run of the AI SDK's loop; returns the number of steps. */
export function aiSdkLoop(baseUrl: string, shape: ChatShape, maxSteps: number): () => Promise<number> {
  const provider = createOpenAICompatible({ name: 'lmstudio', baseURL: `${baseUrl}/v1`, includeUsage: true });
  const model = provider.chatModel(shape.model);
  const convert = schemaOf(shape, 'convert_units');
  const finish = schemaOf(shape, 'finish_task');
  const tools = {
    convert_units: tool({
      description: convert.description,
      inputSchema: jsonSchema<ConvertArgs>(convert.parameters as Parameters<typeof jsonSchema>[0]),
      execute: async (args: ConvertArgs) => convertUnits(args),
    }),
    // Ends the loop (stopWhen hasToolCall), as finish_task ends the fabric's.
    finish_task: tool({
      description: finish.description,
      inputSchema: jsonSchema<FinishArgs>(finish.parameters as Parameters<typeof jsonSchema>[0]),
      execute: async () => 'accepted',
    }),
  };
  return async () => {
    let failure: unknown;
    const result = streamText({
      model,
      system: shape.system,
      prompt: shape.task,
      tools,
      stopWhen: [stepCountIs(maxSteps), hasToolCall('finish_task')],
      maxRetries: 0,
      onError: ({ error }) => {
        failure ??= error;
      },
    });
    await result.consumeStream();
    if (failure !== undefined) throw failure;
    const steps = await result.steps;
    if (steps.at(-1)?.toolCalls[0]?.toolName !== 'finish_task')
      throw new Error('bench: the AI SDK run did not end with finish_task');
    return steps.length;
  };
}

/** A run of the Agents SDK's runner; returns the number of model turns. */
export function agentsSdkLoop(baseUrl: string, shape: ChatShape, maxSteps: number): () => Promise<number> {
  setTracingDisabled(true);
  const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'bench', maxRetries: 0 });
  const convert = schemaOf(shape, 'convert_units');
  const finish = schemaOf(shape, 'finish_task');
  const agent = new Agent({
    name: 'units',
    instructions: shape.system,
    model: new OpenAIChatCompletionsModel(client, shape.model),
    tools: [
      agentTool({
        name: 'convert_units',
        description: convert.description,
        parameters: convert.parameters as unknown as NonStrictSchema,
        strict: false,
        execute: async (input) => convertUnits(input as ConvertArgs),
      }),
      agentTool({
        name: 'finish_task',
        description: finish.description,
        parameters: finish.parameters as unknown as NonStrictSchema,
        strict: false,
        execute: async () => 'accepted',
      }),
    ],
    // A call to finish_task ends the run, as it ends the fabric's.
    toolUseBehavior: { stopAtToolNames: ['finish_task'] },
  });
  return async () => {
    // The SDK adds an abort listener per request to a signal it makes for the run and keeps them
    // for the run, so a 50-request run trips MaxListenersExceededWarning. The limit is raised only
    // while that signal is made (runs here are one at a time), not for the other contenders.
    setMaxListeners(maxSteps + 10);
    const result = await run(agent, shape.task, { stream: true, maxTurns: maxSteps }).finally(() =>
      setMaxListeners(defaultMaxListeners),
    );
    for await (const _event of result) {
      // Consumed as a UI would; the events themselves are not needed here.
    }
    await result.completed;
    if (result.error) throw result.error;
    if (result.finalOutput !== 'accepted') throw new Error('bench: the Agents SDK run did not finish');
    return result.rawResponses.length;
  };
}
