import type { ScriptedTurn } from './fake-llm-server.ts';

/** convert → finish without `answer` (rejected) → finish with it. */
export const CONVERSION_SCRIPT: ScriptedTurn[] = [
  {
    reply: {
      content: 'Converting first.',
      toolCalls: [{ name: 'convert_units', arguments: { value: 3, from: 'km', to: 'mi' } }],
      usage: { prompt: 100, completion: 10 },
    },
    stream: 'openai',
  },
  {
    reply: {
      toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted 3 km.' } }],
      usage: { prompt: 150, completion: 12 },
    },
  },
  {
    reply: {
      toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted 3 km.', answer: '1.864114 mi' } }],
      usage: { prompt: 200, completion: 14 },
    },
  },
];

/** The runlog kinds CONVERSION_SCRIPT produces, in seq order. */
export const CONVERSION_KINDS = [
  'run_start',
  'llm_request',
  'llm_response',
  'tool_call',
  'tool_result',
  'llm_request',
  'llm_response',
  'tool_call',
  'finish_rejected',
  'llm_request',
  'llm_response',
  'tool_call',
  'run_end',
];
