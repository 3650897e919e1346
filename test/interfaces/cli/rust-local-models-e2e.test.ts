import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rustOnFakes } from '../../support/rust-run.ts';
import type { ScriptedTurn } from '../../support/fake-llm-server.ts';

/**
 * Issue 22's "done when": a rust run on the example crate succeeds end to end against each way a
 * 2026 server or model answers (SPEC §16, shapes from ../shared/research/local-model-quirks.md),
 * the file is written, the crate compiles (the finish gate runs cargo check), and no reasoning
 * reaches a request or the payload.
 */
const THOUGHT = 'PRIVATE-THOUGHT';
const PLAN = 'Step one.\nStep two.';
const WRITE = { name: 'write_file', arguments: { path: 'PLAN.md', content: PLAN } };
const JSON_ARGS = JSON.stringify(WRITE.arguments);
const FINISH: ScriptedTurn = {
  reply: {
    toolCalls: [
      {
        name: 'finish_task',
        arguments: { summary: 'Wrote the plan.', artifacts: ['PLAN.md'], next_steps: [], notes: '' },
      },
    ],
  },
};
const reasoning = `${THOUGHT}: write the plan, then finish.`;

/** Each case: the turns before FINISH, and the server that answers them. */
const CASES: [string, 'lm_studio' | 'ollama', ScriptedTurn[]][] = [
  ['LM Studio reasoning_content', 'lm_studio', [{ reply: { toolCalls: [WRITE], reasoning } }]],
  [
    'LM Studio reasoning (gpt-oss)',
    'lm_studio',
    [{ reply: { toolCalls: [WRITE], reasoning, reasoningField: 'reasoning' } }],
  ],
  ['Ollama /api/chat thinking', 'ollama', [{ reply: { toolCalls: [WRITE], reasoning } }]],
  [
    '<think> in the content',
    'lm_studio',
    [{ reply: { content: `<think>${reasoning}</think>\n`, toolCalls: [WRITE], chunkChars: 4 } }],
  ],
  [
    'a lone </think>',
    'lm_studio',
    [{ reply: { content: `${reasoning}</think>`, toolCalls: [WRITE], chunkChars: 5 } }],
  ],
  [
    'a think-only turn, then a real one',
    'lm_studio',
    [{ reply: { content: '', reasoning } }, { reply: { toolCalls: [WRITE] } }],
  ],
  [
    'a call inside the reasoning',
    'lm_studio',
    [
      {
        reply: {
          content: '',
          reasoning: `${THOUGHT} <tool_call>{"name":"write_file","arguments":${JSON_ARGS}}</tool_call>`,
        },
      },
    ],
  ],
  [
    'hermes',
    'lm_studio',
    [{ reply: { content: `<tool_call>{"name":"write_file","arguments":${JSON_ARGS}}</tool_call>` } }],
  ],
  [
    'qwen3_coder_xml',
    'lm_studio',
    [
      {
        reply: {
          content: `<tool_call>\n<function=write_file>\n<parameter=path>\nPLAN.md\n</parameter>\n<parameter=content>\n${PLAN}\n</parameter>\n</function>\n</tool_call>`,
        },
      },
    ],
  ],
  ['mistral', 'lm_studio', [{ reply: { content: `[TOOL_CALLS]write_file[ARGS]${JSON_ARGS}` } }]],
  [
    'llama3_python_tag',
    'ollama',
    [{ reply: { content: `<|python_tag|>{"name":"write_file","parameters":${JSON_ARGS}}<|eom_id|>` } }],
  ],
  [
    'harmony',
    'lm_studio',
    [
      {
        reply: {
          content: `<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>${JSON_ARGS}<|call|>`,
        },
      },
    ],
  ],
  [
    'lfm',
    'lm_studio',
    [
      {
        reply: {
          content:
            '<|tool_call_start|>[write_file(path="PLAN.md", content="Step one.\\nStep two.")]<|tool_call_end|>',
        },
      },
    ],
  ],
  [
    'gemma4',
    'ollama',
    [
      {
        reply: {
          content: `<|tool_call>call:write_file{content:<|"|>${PLAN}<|"|>,path:<|"|>PLAN.md<|"|>}<tool_call|>`,
        },
      },
    ],
  ],
  ['bare_json with args', 'ollama', [{ reply: { content: `{"name":"write_file","args":${JSON_ARGS}}` } }]],
];

describe('fabric run --specialist rust with the models of 2026', () => {
  const rustOn = rustOnFakes();

  it.each(CASES)('succeeds against %s', async (_name, flavor, turns) => {
    const { run, events, stderr, server, workspace } = await rustOn(
      {
        flavor,
        models: [{ id: flavor === 'ollama' ? 'qwen3:8b' : 'qwen/qwen3-coder-30b', toolUse: true }],
        // The content streams three characters at a time: every tag is cut somewhere.
        script: [
          ...turns.map((turn) =>
            'reply' in turn && turn.reply.content
              ? { ...turn, reply: { chunkChars: 3, ...turn.reply } }
              : turn,
          ),
          FINISH,
        ],
      },
      'Write the plan',
    );
    expect(run.status, stderr).toBe('succeeded');
    expect(run.payload).toMatchObject({ summary: 'Wrote the plan.' });
    expect(JSON.stringify(run.payload)).not.toContain(THOUGHT);
    expect(await readFile(join(workspace, 'PLAN.md'), 'utf8')).toBe(PLAN);
    for (const request of server.chatRequests()) expect(JSON.stringify(request.body)).not.toContain(THOUGHT);
    expect(events.some((event) => event.kind === 'text_fallback')).toBe(false);
    expect(events.filter((event) => event.kind === 'finish_rejected')).toEqual([]);
  });
});
