import type { CatalogModel } from '../../../application/ports.ts';
import { parseParamSize } from '../../../application/models/param-size.ts';
import { asRecord, numberField, stringField } from '../http-json.ts';

type Entry = Record<string, unknown>;

function entries(list: unknown): Entry[] {
  return Array.isArray(list) ? list.map(asRecord).filter((entry): entry is Entry => entry !== undefined) : [];
}

function model(baseUrl: string, fields: Omit<CatalogModel, 'backend' | 'baseUrl'>): CatalogModel {
  return { backend: 'lm_studio', baseUrl, ...fields };
}

/**
 * `GET /api/v1/models` (LM Studio >= 0.4.0): `type` is `llm` | `embedding`, `capabilities` an object
 * with `trained_for_tool_use`, loaded means `loaded_instances` is not empty. Undefined when the body
 * is not that shape (an older server answers 200 with an `error` field instead).
 */
export function parseV1Models(body: unknown, baseUrl: string): CatalogModel[] | undefined {
  const list = asRecord(body)?.models;
  if (!Array.isArray(list)) return undefined;
  return entries(list).flatMap((entry) => {
    const id = stringField(entry, 'key');
    if (id === undefined) return [];
    const capabilities = asRecord(entry.capabilities);
    const instances = entries(entry.loaded_instances);
    const tools = capabilities?.trained_for_tool_use;
    const type =
      entry.type === 'embedding'
        ? 'embedding'
        : entry.type === 'llm'
          ? capabilities?.vision === true
            ? 'vlm'
            : 'llm'
          : 'unknown';
    return [
      model(baseUrl, {
        id,
        type,
        toolUse: typeof tools === 'boolean' ? tools : undefined,
        // `capabilities.reasoning` (`{allowed_options, default}`) is documented but not always
        // there (lmstudio-bug-tracker #1659): present means it thinks, absent means unknown.
        ...(capabilities?.reasoning === undefined ? {} : { thinking: true }),
        ...parallelOf(instances[0]),
        loaded: Array.isArray(entry.loaded_instances) ? instances.length > 0 : undefined,
        paramsB: parseParamSize(stringField(entry, 'params_string')),
        // The usable window is the loaded one, not the trained maximum (goose#8399).
        contextLength: numberField(asRecord(instances[0]?.config), 'context_length'),
        maxContextLength: numberField(entry, 'max_context_length'),
        quantisation: stringField(asRecord(entry.quantization), 'name'),
      }),
    ];
  });
}

/**
 * `GET /api/v0/models` (LM Studio >= 0.3.6): `type` is `llm` | `vlm` | `embeddings`, `state`, and a
 * `capabilities` array (0.3.16+) that is absent, not empty, when unknown (llm-lmstudio#1).
 */
export function parseV0Models(body: unknown, baseUrl: string): CatalogModel[] | undefined {
  const record = asRecord(body);
  if (record === undefined || !Array.isArray(record.data) || record.error !== undefined) return undefined;
  return entries(record.data).flatMap((entry) => {
    const id = stringField(entry, 'id');
    if (id === undefined) return [];
    const capabilities = entry.capabilities;
    const state = stringField(entry, 'state');
    return [
      model(baseUrl, {
        id,
        type:
          entry.type === 'embeddings' || entry.type === 'embedding'
            ? 'embedding'
            : entry.type === 'vlm'
              ? 'vlm'
              : entry.type === 'llm'
                ? 'llm'
                : 'unknown',
        toolUse: Array.isArray(capabilities) ? capabilities.includes('tool_use') : undefined,
        loaded: state === 'loaded' ? true : state === 'not-loaded' ? false : undefined,
        paramsB: undefined,
        contextLength: numberField(entry, 'loaded_context_length'),
        maxContextLength: numberField(entry, 'max_context_length'),
        quantisation: stringField(entry, 'quantization'),
      }),
    ];
  });
}

/**
 * `GET /v1/models` (every version): ids only. With JIT loading on it lists downloaded models too,
 * so loaded state stays unknown; only the name can tell an embedding model.
 */
export function parseOpenAiModels(body: unknown, baseUrl: string): CatalogModel[] | undefined {
  const record = asRecord(body);
  if (record === undefined || !Array.isArray(record.data) || record.error !== undefined) return undefined;
  return entries(record.data).flatMap((entry) => {
    const id = stringField(entry, 'id');
    if (id === undefined) return [];
    return [
      model(baseUrl, {
        id,
        // The bundled nomic model and other embedders are listed with the LLMs (lms#416).
        type: /embed/i.test(id) ? 'embedding' : 'unknown',
        toolUse: undefined,
        loaded: undefined,
        paramsB: undefined,
        contextLength: undefined,
        maxContextLength: undefined,
      }),
    ];
  });
}

/** A loaded instance's `config.parallel` (LM Studio's concurrent predictions), when it says. */
function parallelOf(instance: unknown): { parallel?: number } {
  const parallel = numberField(asRecord(asRecord(instance)?.config), 'parallel');
  return parallel !== undefined && Number.isInteger(parallel) && parallel > 0 ? { parallel } : {};
}
