/**
 * The SSRF guard: decides whether a URL may be fetched and which checked address to connect to.
 * The host is resolved once, here, and every address it resolves to is checked; the request then
 * connects to that checked address, so a DNS answer that changes between check and connect
 * (DNS rebinding) cannot slip a private address through.
 */
import { ToolError } from '../../domain/errors.ts';
import { type AddressClass, classifyAddress, parseIpv4, parseIpv6 } from './ip-address.ts';

/** One address a host name resolved to. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to all its addresses. The Node adapter is `DnsHostResolver`. */
export interface HostResolver {
  resolve(hostname: string): Promise<readonly ResolvedAddress[]>;
}

/** What the guard lets through besides public addresses. */
export interface SsrfPolicy {
  /** `host` or `host:port` (`[::1]:8080` for IPv6) that may be reached even on private addresses. */
  readonly allowedHosts: readonly string[];
}

/** A URL that passed the guard, with the address the request must connect to. */
export interface CheckedTarget {
  readonly url: URL;
  /** The host name without IPv6 brackets; used for the Host header and TLS SNI. */
  readonly hostname: string;
  readonly port: number;
  readonly address: ResolvedAddress;
  readonly addresses: readonly string[];
  readonly allowlisted: boolean;
}

/** A refusal by the guard: a tool error carrying an `ssrf_blocked` security event. */
export function ssrfBlocked(
  rule: string,
  message: string,
  requested: string,
  resolved: readonly string[] = [],
): ToolError {
  return new ToolError(message, {
    securityEvent: { eventType: 'ssrf_blocked', rule, requested, resolved: [...resolved] },
  });
}

/** Checks a URL against the policy, resolving its host; throws `ToolError` when it may not be fetched. */
export async function checkTarget(
  rawUrl: string,
  policy: SsrfPolicy,
  resolver: HostResolver,
  signal?: AbortSignal,
): Promise<CheckedTarget> {
  let url: URL;
  try {
    // The WHATWG parser normalises odd IPv4 forms (2130706433, 0177.0.0.1, 0x7f.1, 127.1) to
    // dotted quads, so the checks below see the address the request would really reach.
    url = new URL(rawUrl);
  } catch (cause) {
    throw new ToolError(`"${rawUrl}" is not a valid absolute URL; give a full http:// or https:// URL.`, {
      cause,
    });
  }
  const requested = url.href;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw ssrfBlocked(
      'scheme_not_allowed',
      `Refused to fetch ${requested}: only http and https URLs can be fetched (got ${url.protocol}).`,
      requested,
    );
  }
  const hostname = bareHost(url.hostname);
  const port = effectivePort(url);
  const allowlisted = isAllowlisted(policy.allowedHosts, hostname, port);
  const resolved = await resolveHost(hostname, resolver, signal, requested);
  const addresses = resolved.map((entry) => entry.address);
  if (!allowlisted) {
    for (const address of addresses) {
      const addressClass = classifyAddress(address);
      if (addressClass !== undefined) {
        throw ssrfBlocked(
          `${addressClass}_address`,
          `Refused to fetch ${requested}: ${url.hostname} resolves to ${address}, ${describe(addressClass)}. ` +
            'Only public internet addresses can be fetched.',
          requested,
          addresses,
        );
      }
    }
  }
  // After the address checks, so `http://a@127.0.0.1@10.0.0.1/` is still logged as SSRF.
  if (url.username !== '' || url.password !== '') {
    throw new ToolError(`Refused to fetch ${requested}: URLs with user names or passwords are not fetched.`);
  }
  const first = resolved[0];
  if (first === undefined) throw new ToolError(`Could not resolve ${url.hostname}: no addresses.`);
  return { url, hostname, port, address: first, addresses, allowlisted };
}

/** The host name as a resolver and a socket want it: IPv6 literals without brackets. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/** The port a URL connects to, defaults included. */
export function effectivePort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** True when `host` (or `host:port`) appears in the allowlist; entries are exact, not patterns. */
export function isAllowlisted(allowedHosts: readonly string[], hostname: string, port: number): boolean {
  const host = normaliseHostName(hostname);
  return allowedHosts.some((entry) => {
    const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry.trim()) ?? /^([^:]+)(?::(\d+))?$/.exec(entry.trim());
    if (match === null) return false;
    const entryPort = match[2];
    if (entryPort !== undefined && Number(entryPort) !== port) return false;
    return normaliseHostName(match[1] ?? '') === host;
  });
}

function normaliseHostName(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}

async function resolveHost(
  hostname: string,
  resolver: HostResolver,
  signal: AbortSignal | undefined,
  requested: string,
): Promise<readonly ResolvedAddress[]> {
  if (parseIpv4(hostname) !== undefined) return [{ address: hostname, family: 4 }];
  if (parseIpv6(hostname) !== undefined) return [{ address: hostname, family: 6 }];
  try {
    const lookup = resolver.resolve(hostname);
    const addresses = signal === undefined ? await lookup : await raceAbort(lookup, signal);
    if (addresses.length === 0) throw new Error('no addresses');
    return addresses;
  } catch (cause) {
    if (signal?.aborted) throw new ToolError(`Fetching ${requested} was cancelled or timed out.`, { cause });
    throw new ToolError(`Could not resolve ${hostname}; check the URL.`, { cause });
  }
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

const DESCRIPTIONS: Readonly<Record<AddressClass, string>> = {
  loopback: 'a loopback address',
  private: 'a private network address',
  carrier_grade_nat: 'a carrier-grade NAT address',
  link_local: 'a link-local address',
  cloud_metadata: 'the cloud metadata address',
  unspecified: 'the unspecified address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
  unique_local: 'a unique local (private) IPv6 address',
  nat64_local: 'a local-use NAT64 address',
};

function describe(addressClass: AddressClass): string {
  return DESCRIPTIONS[addressClass];
}
