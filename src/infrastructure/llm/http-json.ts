/** What a JSON endpoint answered: `body` is the parsed JSON, or undefined when the text is not JSON. */
export interface JsonReply {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
}

/**
 * Fetches a URL and parses the answer as JSON when it is JSON. It never decides success from the
 * status alone: LM Studio answers unknown routes 200 with an `error` field, so callers check fields.
 */
export async function fetchJson(
  url: string,
  init: {
    readonly method?: 'GET' | 'POST';
    readonly body?: unknown;
    readonly signal: AbortSignal;
    /** Sent as they are (an `authorization` for a keyed endpoint). */
    readonly headers?: Readonly<Record<string, string>>;
  },
): Promise<JsonReply> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    signal: init.signal,
    headers: {
      ...init.headers,
      ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, body, text };
}

/** A plain record view of a JSON value, or undefined when it is not an object. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The `error` a server put in a 200 (or any) body, as text; undefined when there is none. */
export function bodyError(body: unknown): string | undefined {
  const error = asRecord(body)?.error;
  if (error === undefined || error === null) return undefined;
  if (typeof error === 'string') return error;
  const message = asRecord(error)?.message;
  return typeof message === 'string' ? message : JSON.stringify(error);
}

/** A number field, or undefined. */
export function numberField(record: Record<string, unknown> | undefined, key: string): number | undefined {
  const value = record?.[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A string field, or undefined. */
export function stringField(record: Record<string, unknown> | undefined, key: string): string | undefined {
  const value = record?.[key];
  return typeof value === 'string' ? value : undefined;
}

/** A short description of why a request failed, naming the timeout when it was the timeout. */
export function describeFailure(error: unknown, timeout: AbortSignal, timeoutMs: number): string {
  if (timeout.aborted) return `no answer within ${timeoutMs} ms`;
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === 'string' ? ` (${cause.code})` : '';
  return `${error instanceof Error ? error.message : String(error)}${code}`;
}
