/**
 * Serialises a value for a `$n::text::jsonb` parameter. Postgres `jsonb` (and `text`) refuse
 * U+0000 and lone surrogates, which tool output and hostile paths do contain; one such string
 * would fail the whole batch, every retry, and every `sync`. They become U+FFFD: the runlog file
 * keeps the exact bytes, the database keeps a readable copy.
 *
 * The parameter is cast through `text` on purpose: a parameter typed `jsonb` makes `postgres`
 * JSON-encode a string a second time.
 */
export function jsonParam(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === 'string' && UNSAFE.test(item) ? item.replace(UNSAFE_ALL, '\uFFFD') : item,
  );
}

const PATTERN = '\\u0000|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]';
const UNSAFE = new RegExp(PATTERN);
const UNSAFE_ALL = new RegExp(PATTERN, 'g');
