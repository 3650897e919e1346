import { loadConfig } from '../../../src/config/load.ts';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { Fabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { BatteryHub } from '../../../src/interfaces/http/battery-hub.ts';
import { RunHub } from '../../../src/interfaces/http/run-hub.ts';
import { type ListeningServer, listen } from '../../../src/interfaces/http/serve.ts';
import { type Sandbox, testEnv } from '../../support/fabric-cli.ts';

/** An error answer of the API, as docs/errors.md gives it. */
export interface ErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly issues?: readonly { path: string; expected?: string; found?: string; message: string }[];
  };
}

/** A Fabric on the sandbox's config, with the fake server (or a closed port) as LM Studio. */
export async function makeFabric(
  sandbox: Sandbox,
  lmStudioUrl: string,
  extraEnv: Record<string, string> = {},
): Promise<Fabric> {
  const env = testEnv(sandbox, lmStudioUrl, extraEnv);
  const config = await loadConfig({ configPath: sandbox.configPath, cwd: sandbox.dir, env });
  return new Fabric(config, { env: { PATH: process.env.PATH, HOME: process.env.HOME } });
}

/** The API on a real socket on loopback, with its hub so a test can stop it as `fabric serve` does. */
export interface RunningApi {
  readonly url: string;
  readonly hub: RunHub;
  readonly batteries: BatteryHub;
  stop(): Promise<void>;
}

/** Serves `createApp` for `fabric` on 127.0.0.1, on a free port. */
export async function startApi(fabric: Fabric, token?: string): Promise<RunningApi> {
  const hub = new RunHub(fabric);
  const batteries = new BatteryHub();
  const app = createApp({ fabric, token, requireToken: false, hub, batteries });
  const server: ListeningServer = await listen(app.fetch, { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    hub,
    batteries,
    async stop() {
      await Promise.all([batteries.close(), hub.close()]);
      await server.close(200);
    },
  };
}

/** One Server-Sent Events frame as received. */
export interface SseFrame {
  readonly id: string | undefined;
  readonly event: string | undefined;
  readonly data: string;
}

/** Reads an SSE response to its end (or until `until` says stop), frame by frame; comments are skipped. */
export async function readSse(
  response: Response,
  until: (frame: SseFrame) => boolean = () => false,
): Promise<SseFrame[]> {
  if (!response.body) throw new Error('no body');
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const frames: SseFrame[] = [];
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return frames;
    buffer += value;
    let split = buffer.indexOf('\n\n');
    while (split >= 0) {
      const block = buffer.slice(0, split);
      buffer = buffer.slice(split + 2);
      split = buffer.indexOf('\n\n');
      const frame = parseFrame(block);
      if (frame === undefined) continue;
      frames.push(frame);
      if (until(frame)) {
        await reader.cancel();
        return frames;
      }
    }
  }
}

function parseFrame(block: string): SseFrame | undefined {
  let id: string | undefined;
  let event: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  return { id, event, data: data.join('\n') };
}

/** The run events in SSE frames. */
export function eventsOf(frames: readonly SseFrame[]): RunEvent[] {
  return frames.map((frame) => JSON.parse(frame.data) as RunEvent);
}

/** A JSON POST. */
export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}
