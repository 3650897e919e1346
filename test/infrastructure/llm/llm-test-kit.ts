import { createServer } from 'node:net';
import * as v from 'valibot';
import { afterEach } from 'vitest';
import type { ChatRequest } from '../../../src/application/ports.ts';
import { type LlmConfig, LlmSchema } from '../../../src/config/schema.ts';
import type { ToolSpec } from '../../../src/domain/messages.ts';
import {
  type FakeLlmServer,
  type FakeLlmServerOptions,
  startFakeLlmServer,
} from '../../support/fake-llm-server.ts';

const running: FakeLlmServer[] = [];

/** Starts a fake server that is stopped after the test. */
export async function fake(options: FakeLlmServerOptions): Promise<FakeLlmServer> {
  const server = await startFakeLlmServer(options);
  running.push(server);
  return server;
}

/** Registers the cleanup of every fake started with `fake`. Call once at the top of a test file. */
export function stopFakesAfterEach(): void {
  afterEach(async () => {
    await Promise.all(running.splice(0).map((server) => server.stop().catch(() => {})));
  });
}

/** A loopback URL nothing listens on (a port taken and released). */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

/** An `llm:` config with tiny retry delays and a short probe timeout, as tests want. */
export function llmConfig(fields: Partial<v.InferInput<typeof LlmSchema>> = {}): LlmConfig {
  const parsed = v.parse(LlmSchema, {
    probe_timeout_ms: 800,
    retry: { max_attempts: 2, base_delay_ms: 1, max_delay_ms: 2 },
    ...fields,
  });
  // Entries as src/config/backends.ts leaves them (no lm_studio or ollama entries in these tests).
  return { ...parsed, backends: parsed.backends as LlmConfig['backends'] };
}

export const RETRY = { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 } as const;

export const READ_FILE: ToolSpec = {
  name: 'read_file',
  description: 'Reads a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

/** A one-message chat request offering `read_file`. */
export function ask(
  model: string,
  content = 'Read Cargo.toml',
  signal = new AbortController().signal,
): ChatRequest {
  return { model, messages: [{ role: 'user', content }], tools: [READ_FILE], signal };
}
