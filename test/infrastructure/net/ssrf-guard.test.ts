import { describe, expect, it } from 'vitest';
import { ToolError } from '../../../src/domain/errors.ts';
import {
  checkTarget,
  type HostResolver,
  isAllowlisted,
  type ResolvedAddress,
} from '../../../src/infrastructure/net/ssrf-guard.ts';

/** A resolver that answers from a table and records every question; it never touches DNS. */
function tableResolver(table: Record<string, readonly string[]>): HostResolver & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async resolve(hostname): Promise<readonly ResolvedAddress[]> {
      asked.push(hostname);
      const addresses = table[hostname];
      if (addresses === undefined) throw new Error(`ENOTFOUND ${hostname}`);
      return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  };
}

async function refusal(url: string, resolver: HostResolver, allowedHosts: string[] = []): Promise<ToolError> {
  const error = await checkTarget(url, { allowedHosts }, resolver).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

describe('checkTarget', () => {
  it.each([
    ['http://127.0.0.1/', 'loopback_address'],
    ['http://2130706433/', 'loopback_address'],
    ['http://0177.0.0.1/', 'loopback_address'],
    ['http://0x7f.1/', 'loopback_address'],
    ['http://127.1/', 'loopback_address'],
    ['http://0x7f000001/', 'loopback_address'],
    ['http://[::1]/', 'loopback_address'],
    ['http://[::ffff:127.0.0.1]/', 'loopback_address'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', 'loopback_address'],
    ['http://[64:ff9b::127.0.0.1]/', 'loopback_address'],
    ['http://10.0.0.1/', 'private_address'],
    ['http://172.16.5.4:8080/x', 'private_address'],
    ['http://192.168.1.1/', 'private_address'],
    ['http://100.64.0.1/', 'carrier_grade_nat_address'],
    ['http://169.254.1.1/', 'link_local_address'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud_metadata_address'],
    ['http://[::ffff:169.254.169.254]/', 'cloud_metadata_address'],
    ['http://0.0.0.0/', 'unspecified_address'],
    ['http://0/', 'unspecified_address'],
    ['http://[::]/', 'unspecified_address'],
    ['http://[fe80::1]/', 'link_local_address'],
    ['http://[fc00::1]/', 'unique_local_address'],
    ['http://[fd00:ec2::254]/', 'unique_local_address'],
    ['http://224.0.0.1/', 'multicast_address'],
    ['http://[ff02::1]/', 'multicast_address'],
    ['http://255.255.255.255/', 'broadcast_address'],
    ['http://user@127.0.0.1@10.0.0.1/', 'private_address'],
  ])('refuses %s before any lookup or connection (%s)', async (url, rule) => {
    const resolver = tableResolver({});
    const error = await refusal(url, resolver);
    expect(error.securityEvent).toMatchObject({ eventType: 'ssrf_blocked', rule });
    expect(error.message).toMatch(/Only public internet addresses/);
    expect(resolver.asked).toEqual([]);
  });

  it.each(['file:///etc/passwd', 'ftp://example.com/', 'gopher://example.com/', 'data:text/plain,hi'])(
    'refuses the %s scheme',
    async (url) => {
      const error = await refusal(url, tableResolver({}));
      expect(error.securityEvent).toMatchObject({ eventType: 'ssrf_blocked', rule: 'scheme_not_allowed' });
    },
  );

  it('resolves a host name and refuses it when any of its addresses is private', async () => {
    const resolver = tableResolver({ 'mixed.test': ['93.184.216.34', '10.0.0.7'] });
    const error = await refusal('https://mixed.test/page', resolver);
    expect(error.securityEvent).toEqual({
      eventType: 'ssrf_blocked',
      rule: 'private_address',
      requested: 'https://mixed.test/page',
      resolved: ['93.184.216.34', '10.0.0.7'],
    });
    expect(resolver.asked).toEqual(['mixed.test']);
  });

  it('refuses a name that resolves to loopback or to the metadata address', async () => {
    const resolver = tableResolver({
      'localhost.test': ['::1', '127.0.0.1'],
      'meta.test': ['169.254.169.254'],
    });
    expect((await refusal('http://localhost.test/', resolver)).securityEvent?.rule).toBe('loopback_address');
    expect((await refusal('http://meta.test/', resolver)).securityEvent?.rule).toBe('cloud_metadata_address');
  });

  it('lets a public host through and pins the first checked address', async () => {
    const resolver = tableResolver({ 'public.test': ['93.184.216.34', '2606:2800::1'] });
    const target = await checkTarget('https://Public.TEST/a?b=1#frag', { allowedHosts: [] }, resolver);
    expect(target).toMatchObject({
      hostname: 'public.test',
      port: 443,
      address: { address: '93.184.216.34', family: 4 },
      addresses: ['93.184.216.34', '2606:2800::1'],
      allowlisted: false,
    });
  });

  it('opens an allowlisted host even on a private address, and only on the listed port', async () => {
    const resolver = tableResolver({ 'wiki.internal': ['10.1.2.3'] });
    const allowed = ['wiki.internal:8080'];
    const target = await checkTarget('http://wiki.internal:8080/', { allowedHosts: allowed }, resolver);
    expect(target.allowlisted).toBe(true);
    expect(target.address.address).toBe('10.1.2.3');
    const other = await refusal('http://wiki.internal:9090/', resolver, allowed);
    expect(other.securityEvent?.rule).toBe('private_address');
  });

  it('refuses URLs with credentials and explains invalid ones', async () => {
    const resolver = tableResolver({ 'public.test': ['93.184.216.34'] });
    expect((await refusal('http://me:secret@public.test/', resolver)).message).toMatch(
      /user names or passwords/,
    );
    expect((await refusal('not a url', resolver)).message).toMatch(/not a valid absolute URL/);
    expect((await refusal('http://nowhere.test/', resolver)).message).toMatch(
      /Could not resolve nowhere\.test/,
    );
  });
});

describe('isAllowlisted', () => {
  it('matches exact hosts, with or without a port, IPv6 in brackets', () => {
    expect(isAllowlisted(['127.0.0.1:8080'], '127.0.0.1', 8080)).toBe(true);
    expect(isAllowlisted(['127.0.0.1:8080'], '127.0.0.1', 8081)).toBe(false);
    expect(isAllowlisted(['Docs.Local'], 'docs.local', 443)).toBe(true);
    expect(isAllowlisted(['docs.local'], 'evil-docs.local', 443)).toBe(false);
    expect(isAllowlisted(['docs.local'], 'docs.local.evil.com', 443)).toBe(false);
    expect(isAllowlisted(['[::1]:3000'], '::1', 3000)).toBe(true);
  });
});
