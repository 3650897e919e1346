/**
 * The dialects local models write tool calls in when the server's parser failed (SPEC §16;
 * shapes from ../shared/research/local-model-quirks.md, with the issues they come from). Each
 * reader finds its dialect's markup in a text and reads every call in it, offered or not; the
 * caller decides which to run. Pure.
 */
import { type Read, readDict, readJsonValue, readPythonCall, readPythonCallList } from './literal-reader.ts';

/** A Python-style call's arguments, as a read value. */
function argsOfCall(call: Read<{ args: Record<string, unknown> }> | null): Read<unknown> | null {
  return call === null ? null : { value: call.value.args, end: call.end };
}

/** The dialects recognised, as the runlog names them (`tool_call_recovered.format`). */
export type TextCallDialect =
  | 'harmony'
  | 'gemma4'
  | 'lfm'
  | 'qwen3_coder_xml'
  | 'llama3_function_tag'
  | 'hermes'
  | 'mistral'
  | 'llama3_python_tag'
  | 'lmstudio_tool_request'
  | 'bare_json';

/** One call as written: its name and its arguments (an object, or text to parse as JSON). */
export interface WrittenCall {
  readonly name: string;
  readonly args: unknown;
  /** False for JSON with a name and no arguments key (`{"name": "Bob"}` may be an answer, not a call). */
  readonly argsGiven?: boolean;
}

/** The calls one dialect's markup holds, and how many of its blocks could not be read. */
export interface DialectCalls {
  readonly dialect: TextCallDialect;
  readonly calls: readonly WrittenCall[];
  readonly malformed: number;
}

type Reader = (text: string) => DialectCalls | null;

/** A JSON value as a call: `{name, arguments | parameters | args}` or `{function: {…}}`. */
export function callOfJson(value: unknown): WrittenCall | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  const fn =
    typeof record.function === 'object' && record.function !== null
      ? (record.function as Record<string, unknown>)
      : record;
  if (typeof fn.name !== 'string' || fn.name === '') return null;
  const argsGiven = 'arguments' in fn || 'parameters' in fn || 'args' in fn;
  return { name: fn.name, args: fn.arguments ?? fn.parameters ?? fn.args ?? {}, argsGiven };
}

/** Calls from a JSON value that is one call or a list of them; null when any item is not a call. */
function callsOfJson(value: unknown): WrittenCall[] | null {
  const items = Array.isArray(value) ? value : [value];
  const calls: WrittenCall[] = [];
  for (const item of items) {
    const call = callOfJson(item);
    if (call === null) return null;
    calls.push(call);
  }
  return calls;
}

/** Reads the blocks between each `open` and the following `close` (or the end of the text). */
function blocks(text: string, open: string, close: string): string[] {
  const found: string[] = [];
  let at = text.indexOf(open);
  while (at >= 0) {
    const start = at + open.length;
    const end = text.indexOf(close, start);
    const next = text.indexOf(open, start);
    // An unclosed block runs to the next opening, or to the end of the text (a cut stream).
    const stop = end >= 0 && (next < 0 || end < next) ? end : next >= 0 ? next : text.length;
    found.push(text.slice(start, stop));
    at = next;
  }
  return found;
}

/** Blocks whose body is JSON calls (Hermes, LM Studio's `[TOOL_REQUEST]`). */
function jsonBlocks(dialect: TextCallDialect, open: string, close: string): Reader {
  return (text) => {
    if (!text.includes(open)) return null;
    const calls: WrittenCall[] = [];
    let malformed = 0;
    for (const body of blocks(text, open, close)) {
      const read = readJsonValue(body, 0);
      const parsed = read === null ? null : callsOfJson(read.value);
      if (parsed === null) malformed++;
      else calls.push(...parsed);
    }
    return { dialect, calls, malformed };
  };
}

/** gpt-oss Harmony: `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`. */
const harmony: Reader = (text) => {
  if (!text.includes('to=functions.')) return null;
  const calls: WrittenCall[] = [];
  let malformed = 0;
  for (const match of text.matchAll(/to=functions\.([A-Za-z0-9_.-]+)[\s\S]*?<\|message\|>/g)) {
    const read = readJsonValue(text, match.index + match[0].length);
    if (read === null) malformed++;
    else calls.push({ name: match[1]!, args: read.value });
  }
  return calls.length + malformed > 0 ? { dialect: 'harmony', calls, malformed } : null;
};

/** Gemma 4: `<|tool_call>call:NAME{key:<|"|>v<|"|>,n:42}<tool_call|>`, also with the tokens stripped. */
const gemma4: Reader = (text) => {
  const pattern = /(?:<\|tool_call>\s*)?\bcall:([A-Za-z_][\w.-]*)(?::[A-Za-z_][\w.-]*)?\s*(?=[{(])/g;
  const calls: WrittenCall[] = [];
  let malformed = 0;
  for (const match of text.matchAll(pattern)) {
    const at = match.index + match[0].length;
    const read: Read<unknown> | null =
      text[at] === '{' ? readDict(text, at) : argsOfCall(readPythonCall(`${match[1]}${text.slice(at)}`, 0));
    if (read === null) malformed++;
    else calls.push({ name: match[1]!, args: read.value });
  }
  return calls.length + malformed > 0 ? { dialect: 'gemma4', calls, malformed } : null;
};

/** LFM2/2.5: `<|tool_call_start|>[read_file(path="a.rs")]<|tool_call_end|>`. */
const lfm: Reader = (text) => {
  const open = '<|tool_call_start|>';
  if (!text.includes(open)) return null;
  const calls: WrittenCall[] = [];
  let malformed = 0;
  for (const body of blocks(text, open, '<|tool_call_end|>')) {
    const read = readPythonCallList(body, 0);
    if (read === null) malformed++;
    else calls.push(...read.value.map((call) => ({ name: call.name, args: call.args })));
  }
  return { dialect: 'lfm', calls, malformed };
};

/**
 * `<function=NAME>…</function>`: Qwen3-coder's XML (`<parameter=P>value</parameter>`, inside
 * `<tool_call>` or not), or Llama 3.1's custom-tool form with a JSON body.
 */
const functionTags: Reader = (text) => {
  if (!text.includes('<function=')) return null;
  const calls: WrittenCall[] = [];
  let malformed = 0;
  let json = 0;
  for (const match of text.matchAll(/<function=([^>\s]+)\s*>([\s\S]*?)(?:<\/function>|(?=<function=)|$)/g)) {
    const name = match[1]!;
    const body = match[2]!;
    if (body.trim().startsWith('{')) {
      const read = readJsonValue(body, 0);
      if (read === null) malformed++;
      else {
        calls.push({ name, args: read.value });
        json++;
      }
      continue;
    }
    const args: Record<string, string> = {};
    for (const param of body.matchAll(
      /<parameter=([^>\s]+)\s*>([\s\S]*?)(?:<\/parameter>|(?=<parameter=)|$)/g,
    )) {
      // The Qwen3-coder parsers drop one newline on each side of a value.
      args[param[1]!] = param[2]!.replace(/^\n/, '').replace(/\n$/, '');
    }
    if (Object.keys(args).length === 0 && body.trim() !== '') malformed++;
    else calls.push({ name, args });
  }
  const dialect = json > 0 && json === calls.length ? 'llama3_function_tag' : 'qwen3_coder_xml';
  return calls.length + malformed > 0 ? { dialect, calls, malformed } : null;
};

/** Mistral / Devstral: `[TOOL_CALLS]NAME[ARGS]{…}` (tokenizer v11+, `[CALL_ID]id` optional) or `[TOOL_CALLS][{…}]`. */
const mistral: Reader = (text) => {
  const marker = '[TOOL_CALLS]';
  if (!text.includes(marker)) return null;
  const calls: WrittenCall[] = [];
  let malformed = 0;
  for (const body of text.split(marker).slice(1)) {
    const trimmed = body.trimStart();
    if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
      const read = readJsonValue(trimmed, 0);
      const parsed = read === null ? null : callsOfJson(read.value);
      if (parsed === null) malformed++;
      else calls.push(...parsed);
      continue;
    }
    const named = /^([A-Za-z_][\w.-]*)\s*(?:\[CALL_ID\]\s*\S+?\s*)?\[ARGS\]/.exec(trimmed);
    const read = named === null ? null : readJsonValue(trimmed, named[0].length);
    if (named === null || read === null) malformed++;
    else calls.push({ name: named[1]!, args: read.value });
  }
  return { dialect: 'mistral', calls, malformed };
};

/** Llama 3.x: `<|python_tag|>{"name": …, "parameters": {…}}`, several separated by `;`. */
const llamaPythonTag: Reader = (text) => {
  const marker = '<|python_tag|>';
  const at = text.indexOf(marker);
  if (at < 0) return null;
  const calls: WrittenCall[] = [];
  let malformed = 0;
  let i = at + marker.length;
  for (;;) {
    const read = readJsonValue(text, i);
    const parsed = read === null ? null : callsOfJson(read.value);
    if (read === null || parsed === null) {
      if (calls.length === 0) malformed++;
      break;
    }
    calls.push(...parsed);
    i = read.end;
    const rest = /^\s*;\s*/.exec(text.slice(i));
    if (rest === null) break;
    i += rest[0].length;
  }
  return { dialect: 'llama3_python_tag', calls, malformed };
};

/** A reply that is only JSON (maybe fenced): a call when it has a call's keys. */
const bareJson: Reader = (text) => {
  const unfenced = text
    .trim()
    .replace(/^```(?:json)?\s*\n?([\s\S]*?)\n?```$/, '$1')
    .trim();
  if (!unfenced.startsWith('{') && !unfenced.startsWith('[')) return null;
  const read = readJsonValue(unfenced, 0);
  if (read === null || unfenced.slice(read.end).trim() !== '') return null;
  const parsed = callsOfJson(read.value);
  if (parsed === null || parsed.length === 0) return null;
  return { dialect: 'bare_json', calls: parsed, malformed: 0 };
};

/** The readers, most specific markup first. */
const READERS: readonly Reader[] = [
  harmony,
  lfm,
  gemma4,
  functionTags,
  jsonBlocks('hermes', '<tool_call>', '</tool_call>'),
  mistral,
  llamaPythonTag,
  jsonBlocks('lmstudio_tool_request', '[TOOL_REQUEST]', '[END_TOOL_REQUEST]'),
  bareJson,
];

/** The first dialect whose markup the text holds, with its calls; null when it holds none. */
export function readWrittenCalls(text: string): DialectCalls | null {
  for (const read of READERS) {
    const found = read(text);
    if (found !== null) return found;
  }
  return null;
}
