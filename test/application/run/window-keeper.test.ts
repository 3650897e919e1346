import { describe, expect, it } from 'vitest';
import type { ChatClient, ChatRequest, ChatTurn } from '../../../src/application/ports.ts';
import type { Conversation } from '../../../src/application/run/model-turn.ts';
import { RunRecorder } from '../../../src/application/run/run-recorder.ts';
import { SUMMARY_REQUEST, keepInWindow, summaryCut } from '../../../src/application/run/window-keeper.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { ChatMessage } from '../../../src/domain/messages.ts';
import { ZERO_USAGE } from '../../../src/domain/messages.ts';
import { MemoryRunLogStore } from '../../../src/infrastructure/runlog/memory-run-log-store.ts';

/** A conversation whose middle is the model's own long text with short results: stubs cannot help. */
function talkative(turns: number): Conversation {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a compositor engineer.' },
    { role: 'user', content: 'Fix the damage tracking.' },
  ];
  for (let i = 0; i < turns; i += 1) {
    messages.push({
      role: 'assistant',
      content: `Thinking about step ${i}. `.padEnd(1500, '.'),
      toolCalls: [{ id: `c${i}`, name: 'read_file', arguments: `{"path":"f${i}.rs"}` }],
    });
    messages.push({ role: 'tool', toolCallId: `c${i}`, name: 'read_file', content: `fn f${i}() {}` });
  }
  return { messages, sentCount: messages.length };
}

/** The model, answering the summarising turn (or failing it); the requests it saw. */
function model(answer: string | Error) {
  const seen: ChatRequest[] = [];
  const chat: ChatClient = {
    backend: 'lm_studio',
    complete: async (request) => {
      seen.push(request);
      if (answer instanceof Error) throw answer;
      const turn: ChatTurn = {
        content: answer,
        toolCalls: [],
        finishReason: 'stop',
        usage: ZERO_USAGE,
        latencyMs: 1,
        attempts: 1,
        backend: 'lm_studio test',
      };
      return turn;
    },
  };
  return { chat, seen };
}

async function keep(conversation: Conversation, chat: ChatClient) {
  const store = new MemoryRunLogStore();
  const log = await store.create('r1');
  const recorder = new RunRecorder(log, []);
  const last = await keepInWindow({
    window: 8192,
    replyRoom: 1024,
    recorder,
    conversation,
    specs: [],
    step: 9,
    last: undefined,
    chat,
    model: 'm',
    runId: 'r1',
    signal: new AbortController().signal,
    addUsage: () => {},
  });
  return { last, events: (await store.read('r1')).events };
}

describe('the summarising turn (SPEC §17)', () => {
  it('replaces the middle with the model’s summary, asked with no tools, keeping the head and the last turn', async () => {
    const conversation = talkative(12);
    const head = conversation.messages.slice(0, 2);
    const tail = conversation.messages.slice(-2);
    const { chat, seen } = model('I read f0 to f9; f10 and f11 are left.');
    const { events } = await keep(conversation, chat);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.tools).toEqual([]);
    expect(seen[0]!.messages.at(-1)).toEqual({ role: 'user', content: SUMMARY_REQUEST });
    const messages = conversation.messages;
    expect(messages.slice(0, 2)).toEqual(head);
    expect(messages[2]).toMatchObject({
      role: 'assistant',
      content: expect.stringContaining('I read f0 to f9'),
    });
    // The kept turn is the model's own: a user line keeps the roles alternating.
    expect(messages[3]).toEqual({ role: 'user', content: 'Continue the task from your summary.' });
    expect(messages.slice(4)).toEqual(tail);
    const compaction = events.find((event) => event.kind === 'compaction');
    expect(compaction).toMatchObject({ kind: 'compaction', summarised: 22, window_tokens: 8192 });
    expect(events.map((event) => event.kind)).toEqual(['llm_request', 'llm_response', 'compaction']);
  });

  it('lists the calls made instead when the summary request itself does not fit', async () => {
    const conversation = talkative(12);
    const { chat } = model(new FabricError('context_overflow', 'Input does not fit in context length.'));
    await keep(conversation, chat);
    expect(conversation.messages[2]).toMatchObject({
      role: 'assistant',
      content: expect.stringContaining('- called read_file {"path":"f0.rs"}'),
    });
  });

  it('asks no summary when the middle is too small for one to help (a window the fixed prompt nearly fills)', async () => {
    const conversation = talkative(2);
    conversation.messages[0] = {
      role: 'system',
      content: 'You are a compositor engineer.'.padEnd(18_000, '.'),
    };
    const { chat, seen } = model('never asked');
    await keep(conversation, chat);
    expect(seen).toHaveLength(0);
    expect(conversation.messages).toHaveLength(6);
  });

  it('passes on any other failure of the summary request', async () => {
    const { chat } = model(new FabricError('backend_unavailable', 'gone'));
    await expect(keep(talkative(12), chat)).rejects.toThrow('gone');
  });

  it('never starts the kept turns at a tool result, which must follow its call', () => {
    const messages = talkative(5).messages;
    // Two results answering one call at the end.
    messages.push({
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'a', name: 'read_file', arguments: '{}' },
        { id: 'b', name: 'read_file', arguments: '{}' },
      ],
    });
    messages.push({ role: 'tool', toolCallId: 'a', name: 'read_file', content: 'x' });
    messages.push({ role: 'tool', toolCallId: 'b', name: 'read_file', content: 'y' });
    messages.push({ role: 'user', content: 'go on' });
    const cut = summaryCut(messages)!;
    expect(messages[cut]!.role).toBe('assistant');
    expect(summaryCut(talkative(1).messages)).toBeNull();
  });
});
