import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { Conversation } from '../../../src/application/run/model-turn.ts';
import type { RunRecorder } from '../../../src/application/run/run-recorder.ts';
import { type InboxEntry, Steering } from '../../../src/application/run/steering.ts';

/** An inbox in memory: what a test posts, read once. */
function memoryInbox() {
  const waiting: InboxEntry[] = [];
  return {
    post: (entry: InboxEntry) => waiting.push(entry),
    reader: { read: async () => waiting.splice(0) },
  };
}

describe('Steering between steps (SPEC §19)', () => {
  it('holds a paused run without piling listeners on its signal, and applies what came meanwhile', async () => {
    const inbox = memoryInbox();
    const kinds: string[] = [];
    const recorder = {
      record: async (event: { kind: string }) => {
        kinds.push(event.kind);
        return event;
      },
    } as unknown as RunRecorder;
    const steering = new Steering(inbox.reader, recorder, 1);
    const conversation: Conversation = { messages: [{ role: 'user', content: 'task' }], sentCount: 1 };
    const controller = new AbortController();
    inbox.post({ id: 'p', kind: 'pause', channel: 'test' });
    const held = steering.between(3, conversation, controller.signal);
    // Many poll periods pass while paused; each wait must take its listener away again.
    for (let i = 0; i < 50; i += 1) await new Promise((done) => setTimeout(done, 2));
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
    inbox.post({ id: 'm', kind: 'message', text: 'look at damage.rs', mode: 'steer', channel: 'test' });
    inbox.post({ id: 'u', kind: 'unpause', channel: 'test' });
    await held;
    expect(kinds).toEqual(['run_paused', 'steer_message', 'run_unpaused']);
    expect(conversation.messages.at(-1)).toEqual({ role: 'user', content: 'look at damage.rs' });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
