import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import { createApp } from '../../../../src/interfaces/http/app.ts';
import { type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import { makeFabric } from '../http-harness.ts';

const TOKEN = 'page-token';

describe('the viewer pages with an API token', () => {
  let sandbox: Sandbox;
  let fabric: Fabric;
  beforeAll(async () => {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
  });
  afterAll(async () => {
    await fabric.close();
    await sandbox.cleanup();
  });
  const app = () => createApp({ fabric, token: TOKEN, requireToken: false });

  it('answers the token form, not the runs, to a browser without the token', async () => {
    const response = await app().request('http://127.0.0.1/');
    expect(response.status).toBe(401);
    expect(await response.text()).toContain('<form method="post" action="/login">');
  });

  it('sets a read-only cookie from ?token= and comes back without the token in the address', async () => {
    const response = await app().request('http://127.0.0.1/?status=failed&token=page-token');
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/?status=failed');
    const cookie = response.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^fabric_viewer=[0-9a-f]{64}; Path=\/; HttpOnly; SameSite=Strict/);
    expect(cookie).not.toContain(TOKEN);
    const jar = { cookie: cookie.split(';')[0] ?? '' };
    const list = await app().request('http://127.0.0.1/', { headers: jar });
    expect(list.status).toBe(200);
    expect(list.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect((await app().request('http://127.0.0.1/v1/runs', { headers: jar })).status).toBe(200);
    // The cookie never starts anything: a POST needs the header.
    const post = await app().request('http://127.0.0.1/v1/runs', {
      method: 'POST',
      headers: { ...jar, 'content-type': 'application/json' },
      body: JSON.stringify({ specialist: 'units', task: 't' }),
    });
    expect(post.status).toBe(401);
  });

  it('refuses a wrong token from the form and never redirects off the server', async () => {
    const form = (token: string, next: string) =>
      app().request('http://127.0.0.1/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, next }).toString(),
      });
    expect((await form('wrong', '/')).status).toBe(401);
    const good = await form(TOKEN, '//evil.example/');
    expect(good.status).toBe(303);
    expect(good.headers.get('location')).toBe('/');
  });

  it('keeps the loopback Host guard in front of the pages, token or not', async () => {
    const withToken = await app().request('http://rebind.example/', {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(withToken.status).toBe(403);
    const open = createApp({ fabric, requireToken: false });
    expect((await open.request('http://rebind.example/')).status).toBe(403);
    expect((await open.request('http://127.0.0.1/')).status).toBe(200);
  });
});
