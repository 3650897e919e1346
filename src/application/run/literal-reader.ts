/**
 * Readers for the argument syntaxes local models write tool calls in, when the server did not
 * parse them (SPEC §16): a JSON value inside longer text, Python call lists (LFM, Llama 3.2:
 * `[name(k="v", n=1)]`) and Gemma 4's dictionaries (`{key:<|"|>text<|"|>,n:42}`). Pure; each
 * reader returns the value and where it ended, or null when the text is not of its syntax.
 */

/** A value read from text, and the index just past it. */
export interface Read<T> {
  readonly value: T;
  readonly end: number;
}

/** Gemma 4's string delimiter token. */
const GEMMA_QUOTE = '<|"|>';

/** How deep lists and dictionaries may nest: deeper text is not a call (and cannot exhaust the stack). */
const MAX_DEPTH = 64;

/** Skips whitespace from `at`. */
function skip(text: string, at: number): number {
  let i = at;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  return i;
}

/**
 * The JSON object or array starting at `at` (after whitespace): its extent is found by
 * balancing brackets outside strings, then it is parsed. Null when it is not whole JSON.
 */
export function readJsonValue(text: string, at: number): Read<unknown> | null {
  const start = skip(text, at);
  const open = text[start];
  if (open !== '{' && open !== '[') return null;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      depth--;
      if (depth === 0) {
        try {
          return { value: JSON.parse(text.slice(start, i + 1)), end: i + 1 };
        } catch {
          return null;
        }
      }
    }
  }
  return null;
}

/** A quoted string (`"…"` with JSON escapes, or `'…'` Python-style) at `at`. */
function readQuoted(text: string, at: number): Read<string> | null {
  const quote = text[at];
  if (quote !== '"' && quote !== "'") return null;
  let out = '';
  for (let i = at + 1; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\\' && i + 1 < text.length) {
      const next = text[++i]!;
      const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', '0': '\0' };
      if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) {
        out += String.fromCharCode(Number.parseInt(text.slice(i + 1, i + 5), 16));
        i += 4;
      } else out += escapes[next] ?? next;
      continue;
    }
    if (ch === quote) return { value: out, end: i + 1 };
    out += ch;
  }
  return null;
}

/** A bare word as a scalar: numbers, booleans and nulls in JSON's or Python's spelling; else text. */
function scalarOf(word: string): unknown {
  const trimmed = word.trim();
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(trimmed)) return Number(trimmed);
  if (trimmed === 'true' || trimmed === 'True') return true;
  if (trimmed === 'false' || trimmed === 'False') return false;
  if (trimmed === 'null' || trimmed === 'None') return null;
  return trimmed;
}

/**
 * A literal as local models write them inside call syntax: a quoted string (`"…"`, `'…'`,
 * Gemma's `<|"|>…<|"|>`), a list, a dictionary (`{k: v}` with bare or quoted keys), or a bare
 * scalar up to the next `,`, `)`, `]` or `}`.
 */
export function readLiteral(text: string, at: number, depth = 0): Read<unknown> | null {
  if (depth > MAX_DEPTH) return null;
  const start = skip(text, at);
  if (text.startsWith(GEMMA_QUOTE, start)) {
    const close = text.indexOf(GEMMA_QUOTE, start + GEMMA_QUOTE.length);
    if (close < 0) return null;
    return { value: text.slice(start + GEMMA_QUOTE.length, close), end: close + GEMMA_QUOTE.length };
  }
  const ch = text[start];
  if (ch === undefined) return null;
  if (ch === '"' || ch === "'") return readQuoted(text, start);
  if (ch === '[') return readList(text, start, depth + 1);
  if (ch === '{') return readDict(text, start, depth + 1);
  let i = start;
  while (i < text.length && !',)]}'.includes(text[i]!)) i++;
  if (i === start) return null;
  return { value: scalarOf(text.slice(start, i)), end: i };
}

function readList(text: string, at: number, depth: number): Read<unknown[]> | null {
  const items: unknown[] = [];
  let i = skip(text, at + 1);
  if (text[i] === ']') return { value: items, end: i + 1 };
  for (;;) {
    const item = readLiteral(text, i, depth);
    if (item === null) return null;
    items.push(item.value);
    i = skip(text, item.end);
    if (text[i] === ',') i = skip(text, i + 1);
    else if (text[i] === ']') return { value: items, end: i + 1 };
    else return null;
  }
}

/** A key: quoted, or bare up to `:` or `=` (Gemma 4's grammar takes `[^:}]+`). */
function readKey(text: string, at: number): Read<string> | null {
  const start = skip(text, at);
  if (text.startsWith(GEMMA_QUOTE, start) || text[start] === '"' || text[start] === "'") {
    const quoted = readLiteral(text, start);
    return quoted !== null && typeof quoted.value === 'string'
      ? { value: quoted.value, end: quoted.end }
      : null;
  }
  let i = start;
  while (i < text.length && !':=},'.includes(text[i]!)) i++;
  const key = text.slice(start, i).trim();
  return key === '' ? null : { value: key, end: i };
}

/** `{key: value, …}` with bare or quoted keys, `:` or `=` between key and value. */
export function readDict(text: string, at: number, depth = 0): Read<Record<string, unknown>> | null {
  const out: Record<string, unknown> = {};
  let i = skip(text, at + 1);
  if (text[i] === '}') return { value: out, end: i + 1 };
  for (;;) {
    const key = readKey(text, i);
    if (key === null) return null;
    i = skip(text, key.end);
    if (text[i] !== ':' && text[i] !== '=') return null;
    const value = readLiteral(text, i + 1, depth);
    if (value === null) return null;
    out[key.value] = value.value;
    i = skip(text, value.end);
    if (text[i] === ',') i = skip(text, i + 1);
    else if (text[i] === '}') return { value: out, end: i + 1 };
    else return null;
  }
}

/** A Python-style call: `name(k=v, k2="v2")` (or `k: v`), from `at`. */
export function readPythonCall(
  text: string,
  at: number,
): Read<{ name: string; args: Record<string, unknown> }> | null {
  const start = skip(text, at);
  const match = /^([A-Za-z_][\w.-]*)\s*\(/.exec(text.slice(start));
  if (match === null) return null;
  const args: Record<string, unknown> = {};
  let i = skip(text, start + match[0].length);
  if (text[i] === ')') return { value: { name: match[1]!, args }, end: i + 1 };
  for (;;) {
    const key = readKey(text, i);
    if (key === null) return null;
    i = skip(text, key.end);
    if (text[i] !== '=' && text[i] !== ':') return null;
    const value = readLiteral(text, i + 1);
    if (value === null) return null;
    args[key.value] = value.value;
    i = skip(text, value.end);
    if (text[i] === ',') i = skip(text, i + 1);
    else if (text[i] === ')') return { value: { name: match[1]!, args }, end: i + 1 };
    else return null;
  }
}

/** `[call(…), call(…)]` or a lone `call(…)`. */
export function readPythonCallList(
  text: string,
  at: number,
): Read<{ name: string; args: Record<string, unknown> }[]> | null {
  let i = skip(text, at);
  const bracketed = text[i] === '[';
  if (bracketed) i = skip(text, i + 1);
  const calls: { name: string; args: Record<string, unknown> }[] = [];
  for (;;) {
    const call = readPythonCall(text, i);
    if (call === null) return null;
    calls.push(call.value);
    i = skip(text, call.end);
    if (text[i] === ',') {
      i = skip(text, i + 1);
      continue;
    }
    if (!bracketed) return { value: calls, end: i };
    if (text[i] === ']') return { value: calls, end: i + 1 };
    return null;
  }
}
