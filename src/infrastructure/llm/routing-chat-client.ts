import type {
  BackendKind,
  ChatClient,
  ChatRequest,
  ChatStreamEvent,
  ChatTurn,
} from '../../application/ports.ts';
import { FabricError } from '../../domain/errors.ts';
import type { HealthBook } from './health-book.ts';

/** One backend a run may use, and the model to ask it for. */
export interface ChatRoute {
  /** Health key, e.g. `lm_studio` or `ollama http://127.0.0.1:11434`. */
  readonly key: string;
  readonly client: ChatClient;
  readonly model: string;
}

/**
 * Health-aware routing across backends (SPEC §5). Each request goes to the first route not marked
 * down; when a backend gives up (`backend_unavailable`, after its own retries) it is marked down and
 * the same request moves to the next route, with that route's model. Any other error — a model
 * without tools, a context overflow — ends the run: no fallback hides it.
 */
export class RoutingChatClient implements ChatClient {
  readonly #routes: readonly ChatRoute[];
  readonly #health: HealthBook;
  readonly #onDown: (route: ChatRoute, error: FabricError) => void;
  #current: ChatRoute;

  constructor(
    routes: readonly ChatRoute[],
    health: HealthBook,
    onDown: (route: ChatRoute, error: FabricError) => void = () => {},
  ) {
    const first = routes[0];
    if (first === undefined) throw new Error('RoutingChatClient needs at least one route');
    this.#routes = routes;
    this.#health = health;
    this.#onDown = onDown;
    this.#current = first;
  }

  /** The kind of backend that answered last (the first route before any request). */
  get backend(): BackendKind {
    return this.#current.client.backend;
  }

  async complete(request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn> {
    const failures: string[] = [];
    let last: FabricError | undefined;
    for (const route of this.#health.order(this.#routes, (r) => r.key)) {
      try {
        const turn = await route.client.complete({ ...request, model: route.model }, onEvent);
        this.#health.markUp(route.key);
        this.#current = route;
        // The runlog's backend says where the turn went; name the model when it is not the chosen one.
        return route.model === request.model
          ? turn
          : { ...turn, backend: `${turn.backend} (model ${route.model})` };
      } catch (error) {
        if (!(error instanceof FabricError) || error.code !== 'backend_unavailable') throw error;
        this.#health.markDown(route.key, error.message);
        this.#onDown(route, error);
        failures.push(error.message);
        last = error;
        if (request.signal.aborted) break;
      }
    }
    throw new FabricError(
      'backend_unavailable',
      this.#routes.length === 1
        ? (last?.message ?? 'The backend is unavailable.')
        : `Every backend failed:\n  ${failures.join('\n  ')}`,
      { cause: last },
    );
  }
}
