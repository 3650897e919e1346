import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createResearchPack } from '../../../../src/infrastructure/packs/research/research-pack.ts';
import {
  call,
  refusal,
  type ResearchServers,
  spyRequester,
  spyResolver,
  startResearchServers,
} from './research-fixtures.ts';

let servers: ResearchServers;
beforeAll(async () => {
  servers = await startResearchServers();
});
afterAll(() => servers.close());

describe('network_allowed: false', () => {
  it('refuses both tools with a network_denied event, before any lookup or request', async () => {
    const resolver = spyResolver();
    const requester = spyRequester();
    const pack = await createResearchPack(servers.buildContext({ allowed_hosts: [servers.pages.hostPort] }), {
      resolver,
      requester,
    });
    const searxBefore = servers.searx.requests.length;
    const pagesBefore = servers.pages.requests.length;
    const search = await refusal(call(pack, 'web_search', { query: 'smithay' }));
    const fetched = await refusal(call(pack, 'fetch_url', { url: `${servers.pages.origin}/article` }));
    for (const error of [search, fetched]) {
      expect(error.securityEvent).toMatchObject({ eventType: 'network_denied' });
      expect(error.message).toMatch(/network_allowed: true/);
    }
    expect(fetched.securityEvent?.requested).toBe(`${servers.pages.origin}/article`);
    expect(servers.searx.requests.length).toBe(searxBefore);
    expect(servers.pages.requests.length).toBe(pagesBefore);
    expect(resolver.asked).toEqual([]);
    expect(requester.calls).toEqual([]);
  });
});

describe('fetch_url SSRF guard', () => {
  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'cloud_metadata_address'],
    ['http://10.0.0.1/', 'private_address'],
    ['http://192.168.0.1/admin', 'private_address'],
    ['http://100.64.1.1/', 'carrier_grade_nat_address'],
    ['http://2130706433/', 'loopback_address'],
    ['http://0177.0.0.1/', 'loopback_address'],
    ['http://0x7f.1/', 'loopback_address'],
    ['http://127.1/', 'loopback_address'],
    ['http://[::ffff:127.0.0.1]/', 'loopback_address'],
    ['http://[::1]/', 'loopback_address'],
    ['http://[fe80::1]/', 'link_local_address'],
    ['http://[fd00::1]/', 'unique_local_address'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'cloud_metadata_address'],
    ['http://0.0.0.0/', 'unspecified_address'],
    ['http://224.0.0.1/', 'multicast_address'],
    ['http://255.255.255.255/', 'broadcast_address'],
    ['file:///etc/passwd', 'scheme_not_allowed'],
    ['gopher://127.0.0.1:70/', 'scheme_not_allowed'],
  ])('refuses %s (%s) with a security event and no connection', async (url, rule) => {
    const resolver = spyResolver();
    const requester = spyRequester();
    const pack = await createResearchPack(servers.openAllowed(), { resolver, requester });
    const error = await refusal(call(pack, 'fetch_url', { url }));
    expect(error.securityEvent).toMatchObject({ eventType: 'ssrf_blocked', rule });
    expect(requester.calls).toEqual([]);
  });

  it('refuses a loopback test server that is not allowlisted, by IP and by name', async () => {
    const requester = spyRequester();
    const pack = await createResearchPack(servers.buildContext({ network_allowed: true }), { requester });
    const before = servers.pages.requests.length;
    for (const url of [`${servers.pages.origin}/article`, `http://localhost:${servers.pages.port}/article`]) {
      const error = await refusal(call(pack, 'fetch_url', { url }));
      expect(error.securityEvent).toMatchObject({
        eventType: 'ssrf_blocked',
        rule: 'loopback_address',
        requested: url,
      });
      expect(error.securityEvent?.resolved).toEqual(
        expect.arrayContaining([expect.stringMatching(/127\.0\.0\.1|::1/)]),
      );
    }
    expect(servers.pages.requests.length).toBe(before);
    expect(requester.calls).toEqual([]);
  });

  it.each([
    ['/to-metadata', 'cloud_metadata_address'],
    ['/to-loopback-2', 'loopback_address'],
  ])('refuses an allowlisted server redirecting (%s) to a forbidden address', async (path, rule) => {
    const requester = spyRequester();
    const pack = await createResearchPack(servers.openAllowed(), { requester });
    const error = await refusal(call(pack, 'fetch_url', { url: `${servers.pages.origin}${path}` }));
    expect(error.securityEvent).toMatchObject({ eventType: 'ssrf_blocked', rule });
    expect(requester.calls).toEqual([`${servers.pages.origin}${path}`]);
  });
});
