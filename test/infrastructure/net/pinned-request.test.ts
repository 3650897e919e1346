import { describe, expect, it } from 'vitest';
import { ToolError } from '../../../src/domain/errors.ts';
import { nodePinnedRequester } from '../../../src/infrastructure/net/pinned-request.ts';
import type { CheckedTarget } from '../../../src/infrastructure/net/ssrf-guard.ts';

function target(url: string, address: string, family: 4 | 6): CheckedTarget {
  const parsed = new URL(url);
  return {
    url: parsed,
    hostname: parsed.hostname,
    port: 80,
    address: { address, family },
    addresses: [address],
    allowlisted: true,
  };
}

describe('nodePinnedRequester', () => {
  // A link-local IPv6 address without a zone fails inside connect() itself (EINVAL), as an
  // unroutable address does in a namespace with no routes: the error comes before any packet.
  it('turns a connect that fails at once, for a host name, into a tool error instead of a crash', async () => {
    const attempt = nodePinnedRequester(target('http://pinned.fabric.test/', 'fe80::1', 6), {
      signal: AbortSignal.timeout(5000),
      headers: {},
    });
    await expect(attempt).rejects.toBeInstanceOf(ToolError);
    await expect(attempt).rejects.toThrow(
      /Could not fetch http:\/\/pinned\.fabric\.test\/ \(fe80::1\): .*\(EINVAL\)\. Try another source\./,
    );
  });

  it('names a refused connection in words', async () => {
    const attempt = nodePinnedRequester(
      { ...target('http://127.0.0.1:9/', '127.0.0.1', 4), port: 9 },
      {
        signal: AbortSignal.timeout(5000),
        headers: {},
      },
    );
    await expect(attempt).rejects.toThrow(/the connection was refused \(ECONNREFUSED\)/);
  });
});
