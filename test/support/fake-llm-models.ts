import { randomBytes } from 'node:crypto';
import type { Answer, FakeModel } from './fake-llm-types.ts';

/** A JSON answer; Ollama (gin) and LM Studio (Express) both label JSON with a charset. */
export function jsonAnswer(status: number, body: unknown): Answer {
  return { kind: 'body', status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}

/** A text/plain answer. */
export function textAnswer(status: number, body: string): Answer {
  return { kind: 'body', status, contentType: 'text/plain; charset=utf-8', body };
}

/** Random lowercase alphanumerics, the alphabet of Ollama's call ids and LM Studio's completion ids. */
export function randomAlnum(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(randomBytes(length), (b) => alphabet[b % alphabet.length]).join('');
}

/** A random decimal string: LM Studio's tool-call ids look like '365174485'. */
export function randomDigits(length: number): string {
  return Array.from(randomBytes(length), (b, i) => (i === 0 ? 1 + (b % 9) : b % 10)).join('');
}

/** Ollama's name rule: a missing tag means ':latest' (a namespace's '/' does not count as a tag). */
export function ollamaFullName(name: string): string {
  const lastSegment = name.slice(name.lastIndexOf('/') + 1);
  return lastSegment.includes(':') ? name : `${name}:latest`;
}

/** The registry-qualified name Ollama puts in capability errors, e.g. registry.ollama.ai/library/x:latest. */
export function ollamaRegistryName(name: string): string {
  const full = ollamaFullName(name);
  const firstSegment = full.split('/')[0] ?? '';
  if (full.includes('/') && firstSegment.includes('.')) return full; // hf.co/user/repo:quant
  return full.includes('/') ? `registry.ollama.ai/${full}` : `registry.ollama.ai/library/${full}`;
}

/** Finds a model by id; Ollama compares names with the ':latest' rule, LM Studio exactly. */
export function findModel(
  models: FakeModel[],
  id: string,
  flavor: 'lm_studio' | 'ollama',
): FakeModel | undefined {
  if (flavor === 'lm_studio') return models.find((m) => m.id === id);
  const wanted = ollamaFullName(id);
  return models.find((m) => ollamaFullName(m.id) === wanted);
}

/** The model's name without publisher, namespace or tag: 'qwen/qwen3-coder-30b' -> 'qwen3-coder-30b'. */
export function baseName(id: string): string {
  const last = id.slice(id.lastIndexOf('/') + 1);
  const colon = last.indexOf(':');
  return colon === -1 ? last : last.slice(0, colon);
}

/** A plausible architecture name ('llama', 'qwen', 'nomic-bert'); only its use as a key prefix matters. */
export function archOf(model: FakeModel): string {
  const name = baseName(model.id).toLowerCase();
  if (model.type === 'embedding') return name.includes('nomic') ? 'nomic-bert' : 'bert';
  return /^[a-z]+/.exec(name)?.[0] ?? 'llama';
}

/** Parses '8.0B' / '566.70M' / '137M' into a count, for general.parameter_count and size estimates. */
export function parameterCount(paramSize: string | undefined): number {
  const match = /^(\d+(?:\.\d+)?)([KMBT])$/i.exec(paramSize ?? '');
  if (!match) return 7_000_000_000;
  const scale: Record<string, number> = { K: 1e3, M: 1e6, B: 1e9, T: 1e12 };
  return Math.round(Number(match[1]) * (scale[(match[2] ?? 'B').toUpperCase()] ?? 1e9));
}

/** Default trained context: embedding models are short, chat models long. */
export function maxContextOf(model: FakeModel): number {
  return model.maxContextLength ?? (model.type === 'embedding' ? 2048 : 32768);
}

/** Default loaded context, the common 4096 of both servers. */
export function loadedContextOf(model: FakeModel): number {
  return model.contextLength ?? Math.min(4096, maxContextOf(model));
}

/** Compares dotted versions numerically ('0.30.0' > '0.6.4'); suffixes such as '-rc2' are ignored. */
export function versionAtLeast(version: string, minimum: string): boolean {
  const parse = (v: string): number[] =>
    v
      .split('-')[0]!
      .split('.')
      .map((p) => Number.parseInt(p, 10) || 0);
  const a = parse(version);
  const b = parse(minimum);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff > 0;
  }
  return true;
}
