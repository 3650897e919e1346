/**
 * A GET that is safe to point at model-chosen URLs: every hop passes the SSRF guard, redirects
 * are followed by hand (so each target is checked before any connection), and the whole fetch
 * has a time limit and a size limit. The socket work is a `PinnedRequester` (Node:
 * `nodePinnedRequester`), so this module is free of runtime specifics.
 */
import { ToolError } from '../../domain/errors.ts';
import type { BoundedBody } from './bounded-body.ts';
import { type CheckedTarget, checkTarget, type HostResolver, type SsrfPolicy } from './ssrf-guard.ts';

/** A response whose headers have arrived; the body is read (bounded) or discarded. */
export interface PinnedResponse {
  readonly status: number;
  /** Lower-case header names; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  readBody(maxBytes: number): Promise<BoundedBody>;
  discard(): void;
}

/** Sends one GET to `target.address` without resolving the host again. Throws `ToolError`. */
export type PinnedRequester = (
  target: CheckedTarget,
  options: { readonly signal: AbortSignal; readonly headers: Readonly<Record<string, string>> },
) => Promise<PinnedResponse>;

/** Limits and collaborators of `safeFetch`. */
export interface SafeFetchOptions {
  readonly policy: SsrfPolicy;
  readonly resolver: HostResolver;
  readonly requester: PinnedRequester;
  readonly maxRedirects: number;
  /** Bound on the decoded body; more is cut off and `truncated` is set. */
  readonly maxBytes: number;
  /** Bound on the whole fetch, redirects included. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Looks at the final Content-Type before the body is read; a returned message refuses it. */
  readonly accept?: (contentType: string) => string | undefined;
}

/** What a successful fetch returns. */
export interface FetchedResource {
  readonly requestedUrl: string;
  readonly finalUrl: string;
  /** Every URL requested, in order: the requested one, then each redirect target. */
  readonly hops: readonly string[];
  readonly status: number;
  readonly contentType: string;
  readonly bytes: Uint8Array;
  readonly truncated: boolean;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const REQUEST_HEADERS: Readonly<Record<string, string>> = {
  'user-agent': 'agent-fabric-research/0.1 (+https://github.com/agent-fabric)',
  accept:
    'text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.8,*/*;q=0.1',
  'accept-encoding': 'gzip, deflate, br',
};

/** Fetches `url` within the policy and limits; throws `ToolError` (with a security event for refusals). */
export async function safeFetch(url: string, options: SafeFetchOptions): Promise<FetchedResource> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
  try {
    return await followRedirects(url, options, signal);
  } catch (error) {
    if (error instanceof ToolError && error.securityEvent !== undefined) throw error;
    if (options.signal?.aborted) throw new ToolError(`Fetching ${url} was cancelled.`, { cause: error });
    if (timeout.aborted) {
      throw new ToolError(`Fetching ${url} took longer than ${options.timeoutMs} ms and was stopped.`, {
        cause: error,
      });
    }
    throw error;
  }
}

async function followRedirects(url: string, options: SafeFetchOptions, signal: AbortSignal) {
  const hops: string[] = [];
  let current = url;
  for (let redirects = 0; ; redirects += 1) {
    const target = await checkTarget(current, options.policy, options.resolver, signal);
    hops.push(target.url.href);
    const response = await options.requester(target, { signal, headers: REQUEST_HEADERS });
    if (REDIRECT_STATUSES.has(response.status)) {
      response.discard();
      current = nextHop(response, target, redirects, options.maxRedirects);
      continue;
    }
    if (response.status < 200 || response.status > 299) {
      response.discard();
      throw new ToolError(`${target.url.href} answered HTTP ${response.status}; try another source.`);
    }
    const contentType = response.headers['content-type'] ?? '';
    const refusal = options.accept?.(contentType);
    if (refusal !== undefined) {
      response.discard();
      throw new ToolError(refusal);
    }
    const body = await response.readBody(options.maxBytes);
    return {
      requestedUrl: hops[0] ?? url,
      finalUrl: target.url.href,
      hops,
      status: response.status,
      contentType,
      bytes: body.bytes,
      truncated: body.truncated,
    } satisfies FetchedResource;
  }
}

function nextHop(response: PinnedResponse, target: CheckedTarget, redirects: number, max: number): string {
  const location = response.headers.location;
  if (location === undefined || location === '') {
    throw new ToolError(`${target.url.href} answered HTTP ${response.status} without a Location header.`);
  }
  if (redirects >= max) {
    throw new ToolError(`${target.url.href} redirected more than ${max} times; stopped following redirects.`);
  }
  try {
    return new URL(location, target.url).href;
  } catch (cause) {
    throw new ToolError(`${target.url.href} redirected to an invalid URL "${location}".`, { cause });
  }
}
