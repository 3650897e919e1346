/** Normalises an LM Studio base URL: scheme added, trailing `/` and `/v1` removed. */
export function normalizeLmStudioUrl(raw: string): string {
  let url = raw.trim();
  if (!/^https?:\/\//i.test(url)) url = `http://${url}`;
  url = url.replace(/\/+$/, '');
  url = url.replace(/\/v1$/i, '');
  return url.replace(/\/+$/, '');
}

/** Splits `LM_STUDIO_URL` (comma-separated) into normalised base URLs. */
export function parseLmStudioUrls(raw: string): string[] {
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map(normalizeLmStudioUrl);
}

/**
 * Normalises `OLLAMA_HOST` the way Ollama reads it: `host`, `host:port`, `:port`, or a URL;
 * the default port is 11434, and `0.0.0.0` (listen on all interfaces) means this machine.
 */
export function normalizeOllamaHost(raw: string): string {
  let value = raw.trim().replace(/\/+$/, '');
  let scheme = 'http';
  const schemeMatch = /^(https?):\/\//i.exec(value);
  if (schemeMatch) {
    scheme = schemeMatch[1]!.toLowerCase();
    value = value.slice(schemeMatch[0].length);
  }
  const slash = value.indexOf('/');
  const path = slash >= 0 ? value.slice(slash).replace(/\/v1$/i, '') : '';
  let hostPort = slash >= 0 ? value.slice(0, slash) : value;
  let host = hostPort;
  let port = scheme === 'https' ? '443' : '11434';
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostPort);
  if (bracketed) {
    host = `[${bracketed[1]}]`;
    if (bracketed[2]) port = bracketed[2];
  } else {
    const colon = hostPort.lastIndexOf(':');
    if (colon >= 0 && hostPort.indexOf(':') === colon) {
      host = hostPort.slice(0, colon);
      port = hostPort.slice(colon + 1) || port;
    }
  }
  if (host === '' || host === '0.0.0.0') host = '127.0.0.1';
  if (host === '[::]') host = '[::1]';
  hostPort = `${host}:${port}`;
  return `${scheme}://${hostPort}${path}`.replace(/\/+$/, '');
}
