import type { ChatClient, ChatRequest, ChatStreamEvent, ChatTurn } from '../../../application/ports.ts';
import { sameModel } from '../../../application/models/resolve-model.ts';
import { SlotScheduler } from './slot-scheduler.ts';
import { RunRanks, prefillOf, promptTokens } from './slot-tickets.ts';

/**
 * One server's slots, for a backend with one server and no pool of its own: Ollama (its
 * `OLLAMA_NUM_PARALLEL`, which it does not report: config `parallel`) and each of `llm.backends`
 * (llama-server's `/props` `total_slots`, or the entry's `parallel`). Each model with a known slot
 * count gets a SlotScheduler, as the LM Studio pool's servers do (ADR 0015): a slot held for its
 * run while the run's tool executes, waiters in their runs' start order. Unknown: no limit.
 */
export class SlottedChatClient implements ChatClient {
  readonly #inner: ChatClient;
  readonly #slotsOf: (model: string) => number | undefined;
  readonly #slots = new Map<string, SlotScheduler>();
  readonly #ranks = new RunRanks();

  /** `slotsOf`: how many requests the server serves at once for a model, when known. */
  constructor(inner: ChatClient, slotsOf: (model: string) => number | undefined) {
    this.#inner = inner;
    this.#slotsOf = slotsOf;
  }

  get backend(): ChatClient['backend'] {
    return this.#inner.backend;
  }

  async complete(request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn> {
    const slots = this.#schedulerFor(request.model);
    if (slots === undefined) return this.#inner.complete(request, onEvent);
    const ticket = {
      run: request.affinity,
      rank: this.#ranks.of(request.affinity),
      tokens: promptTokens(request),
      signal: request.signal,
    };
    await slots.acquire(ticket);
    const sent = Date.now();
    let firstEventAt: number | undefined;
    let turn: ChatTurn | undefined;
    try {
      turn = await this.#inner.complete(request, (event) => {
        if (firstEventAt === undefined && event.type !== 'retry') firstEventAt = Date.now();
        onEvent?.(event);
      });
      return turn;
    } finally {
      // A turn that asked for tools comes back once they ran: its slot is held for it meanwhile.
      slots.release(
        ticket,
        turn !== undefined && turn.toolCalls.length > 0,
        turn === undefined ? undefined : prefillOf(turn, (firstEventAt ?? Date.now()) - sent),
      );
    }
  }

  #schedulerFor(model: string): SlotScheduler | undefined {
    const capacity = this.#slotsOf(model);
    const key = [...this.#slots.keys()].find((id) => sameModel(id, model)) ?? model;
    const slots = this.#slots.get(key);
    if (capacity === undefined) return slots;
    if (slots === undefined) {
      const created = new SlotScheduler(capacity);
      this.#slots.set(key, created);
      return created;
    }
    slots.resize(capacity);
    return slots;
  }
}
