/**
 * LM Studio's model management as the fake imitates it: `POST /api/v1/models/load` (0.4.0+) at a
 * chosen window, `POST /api/v1/models/unload {instance_id}`, and JIT loading with Auto-Evict (its
 * default): a chat request for a model not loaded loads it, and evicts the model JIT-loaded before
 * it (one JIT-loaded model at a time; research/local-model-quirks.md). Every load is recorded, so
 * tests and the bench can count them.
 */
import { jsonAnswer, loadedContextOf } from './fake-llm-models.ts';
import type { Answer, FakeLoad, FakeModel } from './fake-llm-types.ts';

export class FakeModelLoads {
  readonly #models: FakeModel[];
  readonly #jitAutoEvict: boolean;
  readonly loads: FakeLoad[] = [];
  readonly unloads: string[] = [];
  /** The models loaded JIT (Auto-Evict keeps at most one). */
  readonly #jitLoaded = new Set<string>();

  constructor(models: FakeModel[], jitAutoEvict: boolean) {
    this.#models = models;
    this.#jitAutoEvict = jitAutoEvict;
  }

  /** A chat request for `model`: with JIT Auto-Evict, loads it when it is not, evicting the last JIT-loaded one. */
  chat(model: FakeModel): void {
    if (!this.#jitAutoEvict || model.loaded !== false) return;
    for (const id of this.#jitLoaded) {
      const evicted = this.#models.find((m) => m.id === id);
      if (evicted !== undefined) evicted.loaded = false;
    }
    this.#jitLoaded.clear();
    model.loaded = true;
    this.#jitLoaded.add(model.id);
    this.loads.push({ model: model.id, via: 'jit', contextLength: loadedContextOf(model), at: Date.now() });
  }

  /**
   * `POST /api/v1/models/load`: loads the model at the context asked for (at most its trained
   * length, or `loadsAtMost`), and answers with its load config.
   */
  load(body: unknown): Answer {
    const request = (body ?? {}) as { model?: unknown; context_length?: unknown };
    const model = this.#models.find((m) => m.id === request.model);
    if (model === undefined)
      return jsonAnswer(404, {
        error: { type: 'model_not_found', message: `Model "${String(request.model)}" not found` },
      });
    const asked =
      typeof request.context_length === 'number' ? request.context_length : loadedContextOf(model);
    const context = Math.min(asked, model.maxContextLength ?? asked, model.loadsAtMost ?? asked);
    model.loaded = true;
    model.contextLength = context;
    // A model loaded through the API is not JIT-loaded: Auto-Evict leaves it be.
    this.#jitLoaded.delete(model.id);
    this.loads.push({ model: model.id, via: 'api', contextLength: context, at: Date.now() });
    return jsonAnswer(200, {
      type: 'llm',
      instance_id: model.id,
      load_time_seconds: 0.42,
      status: 'loaded',
      load_config: { context_length: context, eval_batch_size: 512, parallel: 4, flash_attention: true },
    });
  }

  /** `POST /api/v1/models/unload {instance_id}`: 404 for an instance not loaded. */
  unload(body: unknown): Answer {
    const id = ((body ?? {}) as { instance_id?: unknown }).instance_id;
    const model = this.#models.find((m) => m.id === id && m.loaded !== false);
    if (model === undefined)
      return jsonAnswer(404, {
        error: { type: 'model_not_found', message: `No loaded model instance "${String(id)}"` },
      });
    model.loaded = false;
    this.#jitLoaded.delete(model.id);
    this.unloads.push(model.id);
    return jsonAnswer(200, { instance_id: model.id });
  }
}
