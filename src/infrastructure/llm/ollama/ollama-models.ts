import type { CatalogModel } from '../../../application/ports.ts';
import { parseParamSize } from '../../../application/models/param-size.ts';
import { sameModel } from '../../../application/models/resolve-model.ts';
import { asRecord, numberField, stringField } from '../http-json.ts';

/** A `/api/tags` entry with what `/api/show` and `/api/ps` added. */
export interface OllamaModelFacts {
  readonly name: string;
  readonly family: string | undefined;
  readonly parameterSize: string | undefined;
  /** From `/api/show` (>= 0.6.4) or `/api/tags` (>= 0.30.0); undefined on older servers. */
  readonly capabilities: readonly string[] | undefined;
  /** Trained maximum: `model_info["<arch>.context_length"]` or `details.context_length`. */
  readonly trainedContext: number | undefined;
  /**
   * `/api/show` `parser` and `renderer` (Q34): a built-in parser's name, `''` when the template
   * parses the calls; undefined when the server did not say (older servers, or no `/api/show` asked).
   */
  readonly parser?: string | undefined;
  readonly renderer?: string | undefined;
  /** The model file's digest (`/api/tags`), which a new pull changes. */
  readonly digest?: string | undefined;
  /** `details.quantization_level`, e.g. `Q4_K_M`. */
  readonly quantisation?: string | undefined;
}

/** A running model from `/api/ps`. */
export interface OllamaRunning {
  readonly name: string;
  readonly contextLength: number | undefined;
}

/** The `/api/tags` list; undefined when the body is not one. */
export function parseTags(body: unknown): OllamaModelFacts[] | undefined {
  const list = asRecord(body)?.models;
  if (!Array.isArray(list)) return undefined;
  return list.flatMap((raw) => {
    const entry = asRecord(raw);
    const name = stringField(entry, 'name') ?? stringField(entry, 'model');
    if (name === undefined) return [];
    const details = asRecord(entry?.details);
    const capabilities = entry?.capabilities;
    return [
      {
        name,
        family: stringField(details, 'family'),
        parameterSize: stringField(details, 'parameter_size'),
        capabilities: Array.isArray(capabilities)
          ? capabilities.filter((c) => typeof c === 'string')
          : undefined,
        trainedContext: numberField(details, 'context_length'),
        digest: stringField(entry, 'digest'),
        quantisation: stringField(details, 'quantization_level'),
      },
    ];
  });
}

/** Adds what `/api/show` knows: capabilities and the trained context length. */
export function withShow(facts: OllamaModelFacts, body: unknown): OllamaModelFacts {
  const show = asRecord(body);
  if (show === undefined || show.error !== undefined) return facts;
  const info = asRecord(show.model_info);
  const arch = stringField(info, 'general.architecture');
  const capabilities = show.capabilities;
  return {
    ...facts,
    capabilities: Array.isArray(capabilities)
      ? capabilities.filter((c) => typeof c === 'string')
      : facts.capabilities,
    trainedContext:
      (arch === undefined ? undefined : numberField(info, `${arch}.context_length`)) ?? facts.trainedContext,
    parser: stringField(show, 'parser'),
    renderer: stringField(show, 'renderer'),
  };
}

/**
 * What reads a model's calls on Ollama (research/local-model-quirks-2.md Q34): a built-in Go
 * parser fails loudly (Q18), the template's parsing silently (Q19).
 */
function toolParserOf(facts: OllamaModelFacts): string | undefined {
  if (facts.parser === undefined) return undefined;
  if (facts.parser === '') return 'the model template (no built-in parser)';
  return `built-in parser ${facts.parser}${facts.renderer ? `, renderer ${facts.renderer}` : ''}`;
}

/** The `/api/ps` list; undefined when the body is not one. */
export function parsePs(body: unknown): OllamaRunning[] | undefined {
  const list = asRecord(body)?.models;
  if (!Array.isArray(list)) return undefined;
  return list.flatMap((raw) => {
    const entry = asRecord(raw);
    const name = stringField(entry, 'name') ?? stringField(entry, 'model');
    return name === undefined ? [] : [{ name, contextLength: numberField(entry, 'context_length') }];
  });
}

/**
 * A catalog model from Ollama's facts. `running` is undefined when `/api/ps` did not answer, so the
 * loaded state stays unknown rather than false.
 */
export function toCatalogModel(
  facts: OllamaModelFacts,
  running: readonly OllamaRunning[] | undefined,
  baseUrl: string,
  version?: string,
): CatalogModel {
  const parser = toolParserOf(facts);
  const caps = facts.capabilities;
  const live = running?.find((entry) => sameModel(entry.name, facts.name));
  return {
    id: facts.name,
    backend: 'ollama',
    baseUrl,
    type: typeOf(facts),
    toolUse: caps === undefined ? undefined : caps.includes('tools'),
    loaded: running === undefined ? undefined : live !== undefined,
    paramsB: parseParamSize(facts.parameterSize),
    contextLength: live?.contextLength,
    maxContextLength: facts.trainedContext,
    // `thinking` since Ollama 0.9.0: the only safe reason to send `think` (else a 400).
    thinking: caps === undefined ? undefined : caps.includes('thinking'),
    ...(version === undefined ? {} : { server: `Ollama ${version}` }),
    ...(parser === undefined ? {} : { toolParser: parser }),
    fileId: facts.digest,
    quantisation: facts.quantisation,
  };
}

function typeOf(facts: OllamaModelFacts): CatalogModel['type'] {
  const caps = facts.capabilities;
  if (caps !== undefined) {
    if (caps.includes('embedding')) return 'embedding';
    return caps.includes('vision') ? 'vlm' : 'llm';
  }
  // Servers before 0.6.4 have no capabilities. Embedding models there are BERT-family
  // (nomic-bert, bert) and carry "embed" or "minilm" in their names; chatting with one is a 400.
  if (/bert$/i.test(facts.family ?? '') || /embed|minilm/i.test(facts.name)) return 'embedding';
  return 'unknown';
}
