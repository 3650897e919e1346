import {
  archOf,
  baseName,
  findModel,
  jsonAnswer,
  loadedContextOf,
  maxContextOf,
  ollamaFullName,
  parameterCount,
  textAnswer,
  versionAtLeast,
} from './fake-llm-models.ts';
import type { Answer, FakeModel } from './fake-llm-types.ts';

// A fixed timestamp keeps catalog bodies stable across calls, like a real unchanged model store.
const MODIFIED_AT = '2025-08-14T15:49:43.634137516-07:00';
const MODIFIED_UNIX = 1755211783;

/** LM Studio answers any route it does not know with HTTP 200 and an error field (lmstudio-bug-tracker#618). */
export function lmStudioUnknownRoute(method: string, path: string): Answer {
  return jsonAnswer(200, { error: `Unexpected endpoint or method. (${method} ${path})` });
}

/** LM Studio's catalog routes: /v1/models, /api/v0/models[/id], /api/v1/models; undefined when not one. */
export function lmStudioCatalog(
  method: string,
  path: string,
  models: FakeModel[],
  v1Api: boolean,
): Answer | undefined {
  if (method !== 'GET') return undefined;
  if (path === '/v1/models') {
    // No `created` field: strict OpenAI model schemas fail on it (JetBrains/koog#139).
    return jsonAnswer(200, {
      data: models.map((m) => ({ id: m.id, object: 'model', owned_by: 'organization_owner' })),
      object: 'list',
    });
  }
  if (path === '/api/v0/models')
    return jsonAnswer(200, { object: 'list', data: models.map(lmStudioV0Model) });
  if (path.startsWith('/api/v0/models/')) {
    const id = decodeURIComponent(path.slice('/api/v0/models/'.length));
    const model = models.find((m) => m.id === id);
    if (model) return jsonAnswer(200, lmStudioV0Model(model));
    // Not recorded from a real server; shaped like LM Studio's model_not_found envelope.
    return jsonAnswer(404, {
      error: {
        message: `Model "${id}" not found. Please specify a valid model.`,
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_found',
      },
    });
  }
  if (path === '/api/v1/models' && v1Api) return jsonAnswer(200, { models: models.map(lmStudioV1Model) });
  return undefined;
}

function publisherOf(id: string): string {
  return id.includes('/') ? (id.split('/')[0] ?? 'lmstudio-community') : 'lmstudio-community';
}

/** v0 shape: type 'embeddings' (plural), state, capabilities only when tool_use (llm-lmstudio#1). */
function lmStudioV0Model(model: FakeModel): Record<string, unknown> {
  const loaded = model.loaded !== false;
  const type = model.type === 'embedding' ? 'embeddings' : (model.type ?? 'llm');
  return {
    id: model.id,
    object: 'model',
    type,
    publisher: publisherOf(model.id),
    arch: archOf(model),
    compatibility_type: 'gguf',
    quantization: 'Q4_K_M',
    state: loaded ? 'loaded' : 'not-loaded',
    max_context_length: maxContextOf(model),
    ...(loaded ? { loaded_context_length: loadedContextOf(model) } : {}),
    ...(model.toolUse === true ? { capabilities: ['tool_use'] } : {}),
  };
}

/** v1 shape (LM Studio >= 0.4.0): type 'llm' | 'embedding', capabilities object, loaded_instances. */
function lmStudioV1Model(model: FakeModel): Record<string, unknown> {
  const embedding = model.type === 'embedding';
  const loaded = model.loaded !== false;
  return {
    type: embedding ? 'embedding' : 'llm',
    publisher: publisherOf(model.id),
    key: model.id,
    display_name: baseName(model.id),
    architecture: archOf(model),
    quantization: { name: 'Q4_K_M', bits_per_weight: 4 },
    size_bytes: Math.round(parameterCount(model.paramSize) * 0.6),
    params_string: model.paramSize ?? null,
    loaded_instances: loaded
      ? [
          {
            id: model.id,
            config: {
              context_length: loadedContextOf(model),
              eval_batch_size: 512,
              parallel: model.parallel ?? 4,
              flash_attention: true,
              offload_kv_cache_to_gpu: true,
            },
          },
        ]
      : [],
    max_context_length: maxContextOf(model),
    format: 'gguf',
    // Embedding models carry no capabilities object at all.
    ...(embedding
      ? {}
      : {
          capabilities: {
            vision: model.type === 'vlm',
            trained_for_tool_use: model.toolUse === true,
            ...(model.thinking ? { reasoning: { allowed_options: ['off', 'on'], default: 'on' } } : {}),
          },
        }),
    description: null,
    variants: [`${model.id}@q4_k_m`],
    selected_variant: `${model.id}@q4_k_m`,
  };
}

/** Ollama answers unknown routes the gin way: 404 text. */
export function ollamaUnknownRoute(): Answer {
  return textAnswer(404, '404 page not found');
}

/** Ollama's catalog routes: /, /api/version, /api/tags, /api/show, /api/ps, /v1/models[/id]. */
export function ollamaCatalog(
  method: string,
  path: string,
  body: unknown,
  models: FakeModel[],
  version: string,
): Answer | undefined {
  if (path === '/' && (method === 'GET' || method === 'HEAD')) return textAnswer(200, 'Ollama is running');
  if (method === 'GET' && path === '/api/version') return jsonAnswer(200, { version });
  if (method === 'GET' && path === '/api/tags') {
    // capabilities and details.context_length in /api/tags arrived in v0.30.0 (ollama commit 4b2d529).
    const rich = versionAtLeast(version, '0.30.0');
    return jsonAnswer(200, {
      models: models.map((m) => ({
        name: ollamaFullName(m.id),
        model: ollamaFullName(m.id),
        modified_at: MODIFIED_AT,
        size: Math.round(parameterCount(m.paramSize) * 0.6),
        digest: m.digest ?? digestOf(m.id),
        details: { ...ollamaDetails(m), ...(rich ? { context_length: maxContextOf(m) } : {}) },
        ...(rich ? ollamaCapabilities(m, version) : {}),
      })),
    });
  }
  if (method === 'GET' && path === '/api/ps') {
    return jsonAnswer(200, {
      models: models
        .filter((m) => m.loaded !== false)
        .map((m) => {
          const size = Math.round(parameterCount(m.paramSize) * 0.7);
          return {
            name: ollamaFullName(m.id),
            model: ollamaFullName(m.id),
            size,
            digest: m.digest ?? digestOf(m.id),
            details: ollamaDetails(m),
            expires_at: new Date(Date.now() + 5 * 60_000).toISOString(),
            size_vram: size,
            context_length: loadedContextOf(m),
          };
        }),
    });
  }
  if (method === 'POST' && path === '/api/show') return ollamaShow(body, models, version);
  if (method === 'GET' && path === '/v1/models') {
    return jsonAnswer(200, { object: 'list', data: models.map(ollamaOpenAiModel) });
  }
  if (method === 'GET' && path.startsWith('/v1/models/')) {
    const id = decodeURIComponent(path.slice('/v1/models/'.length));
    const model = findModel(models, id, 'ollama');
    if (model) return jsonAnswer(200, ollamaOpenAiModel(model));
    return jsonAnswer(404, {
      error: { message: `model '${id}' not found`, type: 'not_found_error', param: null, code: null },
    });
  }
  return undefined;
}

function ollamaShow(body: unknown, models: FakeModel[], version: string): Answer {
  const request = (typeof body === 'object' && body !== null ? body : {}) as {
    model?: unknown;
    name?: unknown;
  };
  // The old `name` field is still accepted.
  const requested = typeof request.model === 'string' ? request.model : request.name;
  if (typeof requested !== 'string' || requested === '')
    return jsonAnswer(400, { error: 'model is required' });
  const model = findModel(models, requested, 'ollama');
  if (!model) return jsonAnswer(404, { error: `model '${ollamaFullName(requested)}' not found` });
  const arch = archOf(model);
  return jsonAnswer(200, {
    license: '',
    modelfile: `# Modelfile generated by "ollama show"\nFROM ${ollamaFullName(model.id)}\n`,
    parameters: 'num_keep 24\nstop "<|start_header_id|>"',
    template: model.toolUse === true ? '{{- if .Tools }}{{ .Tools }}{{ end }}{{ .Prompt }}' : '{{ .Prompt }}',
    details: ollamaDetails(model),
    model_info: {
      'general.architecture': arch,
      'general.parameter_count': parameterCount(model.paramSize),
      [`${arch}.context_length`]: maxContextOf(model),
      [`${arch}.embedding_length`]: 4096,
    },
    ...ollamaCapabilities(model, version),
    ...(model.parser === undefined ? {} : { parser: model.parser, renderer: model.renderer ?? '' }),
    modified_at: MODIFIED_AT,
  });
}

/**
 * capabilities exist since v0.6.4. For a chat model with toolUse undefined the field is left out,
 * so a test can imitate an older server per model.
 */
function ollamaCapabilities(model: FakeModel, version: string): { capabilities?: string[] } {
  if (!versionAtLeast(version, '0.6.4')) return {};
  if (model.type === 'embedding') return { capabilities: ['embedding'] };
  if (model.toolUse === undefined) return {};
  const capabilities = ['completion'];
  if (model.toolUse) capabilities.push('tools');
  if (model.type === 'vlm') capabilities.push('vision');
  if (model.thinking && versionAtLeast(version, '0.9.0')) capabilities.push('thinking');
  return { capabilities };
}

function ollamaDetails(model: FakeModel): Record<string, unknown> {
  const family = archOf(model);
  return {
    parent_model: '',
    format: 'gguf',
    family,
    families: [family],
    parameter_size: model.paramSize ?? '',
    quantization_level: model.type === 'embedding' ? 'F16' : 'Q4_K_M',
  };
}

function ollamaOpenAiModel(model: FakeModel): Record<string, unknown> {
  const name = ollamaFullName(model.id);
  // owned_by is the namespace: 'library' for official models.
  const owner = name.includes('/') ? (name.split('/').slice(-2, -1)[0] ?? 'library') : 'library';
  return { id: name, object: 'model', created: MODIFIED_UNIX, owned_by: owner };
}

function digestOf(id: string): string {
  let hash = 0;
  for (const ch of id) hash = (hash * 31 + (ch.codePointAt(0) ?? 0)) >>> 0;
  return hash.toString(16).padStart(8, '0').repeat(8);
}
