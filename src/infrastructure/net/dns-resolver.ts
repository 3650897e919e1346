/**
 * The Node adapter of `HostResolver`: the system resolver (`getaddrinfo`, so /etc/hosts counts),
 * asked for every address so the guard can check them all.
 */
import { lookup } from 'node:dns/promises';
import type { HostResolver, ResolvedAddress } from './ssrf-guard.ts';

/** Resolves host names with `node:dns` `lookup(..., { all: true })`. */
export class DnsHostResolver implements HostResolver {
  async resolve(hostname: string): Promise<readonly ResolvedAddress[]> {
    const entries = await lookup(hostname, { all: true, verbatim: true });
    return entries.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
  }
}
