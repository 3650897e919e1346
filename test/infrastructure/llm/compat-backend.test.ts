import { afterEach, describe, expect, it } from 'vitest';
import { Secret } from '../../../src/config/secret.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import { CompatBackend } from '../../../src/infrastructure/llm/compat/compat-backend.ts';
import { startFakeKeyed } from '../../support/fake-llm-compat.ts';
import type { FakeLlmServer } from '../../support/fake-llm-server.ts';
import { RETRY, ask } from './llm-test-kit.ts';

const running: FakeLlmServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.stop()));
});

async function started(server: Promise<FakeLlmServer>): Promise<FakeLlmServer> {
  running.push(await server);
  return running.at(-1) as FakeLlmServer;
}

const KEY = 'sk-live-ECHOED-9f8e7d6c5b4a';

function keyed(url: string) {
  return new CompatBackend(
    {
      kind: 'openai',
      url,
      name: 'cloud',
      api_key_env: 'CLOUD_KEY',
      api_key: new Secret(KEY),
      load_wait_s: 120,
    },
    { probeTimeoutMs: 800, chat: { retry: RETRY, requestTimeoutMs: 5000 } },
  );
}

describe('a keyed backend', () => {
  it('keeps the key out of an error whose server echoed it', async () => {
    const server = await started(startFakeKeyed({ key: KEY, chatKey: 'sk-rotated', modelIds: ['gpt-5'] }));
    const backend = keyed(server.url);
    const [probe] = await backend.probe();
    expect(probe).toMatchObject({ ok: true, name: 'cloud', backend: 'openai' });
    const error = await backend
      .chatClient()
      .complete(ask('gpt-5'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FabricError);
    const fabricError = error as FabricError;
    expect(fabricError.code).toBe('backend_error');
    // The server's 401 repeated the key it was sent; the error says where it was, not what.
    expect(fabricError.message).toContain('Incorrect API key provided: [redacted]');
    expect(JSON.stringify({ message: fabricError.message, details: fabricError.details })).not.toContain(KEY);
    expect(server.chatRequests()[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('says a refused key at discovery without the server words, which may hold the key', async () => {
    const server = await started(startFakeKeyed({ key: 'sk-other', modelIds: ['gpt-5'] }));
    const [probe] = await keyed(server.url).probe();
    expect(probe).toMatchObject({ ok: false, denied: true, models: [] });
    expect(probe?.error).toBe(
      `HTTP 401 from /v1/models: the key in CLOUD_KEY was refused: check it and that it may use ${server.url}`,
    );
  });
});
