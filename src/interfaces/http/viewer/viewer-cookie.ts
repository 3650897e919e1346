/**
 * The run viewer's cookie: a browser cannot put `Authorization` on a link or an EventSource, so
 * once the token has been given (`?token=` or the form) the server sets this cookie. Its value
 * is derived from the token (the token itself is not kept in the browser), it is HttpOnly and
 * SameSite=Strict, and it is accepted for GET and HEAD (reading), and for the viewer's own
 * actions (Resume, Pause, a steer message, an approval's answer: SPEC §18, §19) only when the request also carries `X-Fabric-Viewer: 1`,
 * a header no cross-site form can send and no cross-origin script can add without a preflight
 * this server never grants (the origin guard refuses a foreign `Origin` besides). Never for
 * starting a run.
 */

export const VIEWER_COOKIE = 'fabric_viewer';

/** The cookie's value for a token. */
export async function viewerCookieValue(token: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    'SHA-256',
    new TextEncoder().encode(`agent-fabric viewer\0${token}`),
  );
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** The header the viewer's page puts on its actions. */
export const VIEWER_ACTION_HEADER = 'x-fabric-viewer';

/**
 * The viewer's actions: a POST to one of these, with `X-Fabric-Viewer: 1`: Resume (and Continue),
 * Pause and a steer message of a run, and the answer to an approval (SPEC §18, §19).
 */
const VIEWER_ACTIONS = /^\/v1\/(?:runs\/[^/]+\/(?:resume|pause|messages)|approvals\/[^/]+)$/;

/** True for a request the viewer's page makes as an action (see the module's comment). */
export function isViewerAction(method: string, path: string, header: string | undefined): boolean {
  return method === 'POST' && header === '1' && VIEWER_ACTIONS.test(path);
}

/**
 * True when a GET or HEAD, or a viewer action (`action`), carries the viewer cookie for `token`;
 * compared in constant time.
 */
export async function hasViewerCookie(
  method: string,
  cookieHeader: string | undefined,
  token: string,
  action = false,
): Promise<boolean> {
  if ((method !== 'GET' && method !== 'HEAD' && !action) || cookieHeader === undefined) return false;
  const given = cookieNamed(cookieHeader, VIEWER_COOKIE);
  if (given === undefined) return false;
  const expected = await viewerCookieValue(token);
  if (given.length !== expected.length) return false;
  let difference = 0;
  for (let i = 0; i < expected.length; i++) difference |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return difference === 0;
}

/** The `Set-Cookie` header that keeps the viewer signed in for this server (this host and port). */
export async function viewerSetCookie(token: string): Promise<string> {
  return `${VIEWER_COOKIE}=${await viewerCookieValue(token)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000`;
}

function cookieNamed(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
