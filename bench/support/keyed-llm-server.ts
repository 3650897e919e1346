/**
 * A scripted LM Studio for many runs at once. The test fake (test/support/fake-llm-server.ts)
 * answers from one queue, so runs that interleave would take each other's turns; this one picks
 * each run's turn from its own conversation (the number of tool results so far) and renders it
 * with the fake's own modules, so the bytes on the wire are the fake's.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { lmStudioCatalog, lmStudioUnknownRoute } from '../../test/support/fake-llm-catalog.ts';
import { jsonAnswer } from '../../test/support/fake-llm-models.ts';
import { defaultStyle, openAiStreamFrames } from '../../test/support/fake-llm-openai-chat.ts';
import { estimatePromptTokens, resolveReply } from '../../test/support/fake-llm-reply.ts';
import type { Answer, FakeModel } from '../../test/support/fake-llm-types.ts';
import { BENCH_MODEL, CONVERT_TURN, FINISH_TURN, MODEL_ID } from './units-script.ts';

export interface KeyedLlmServer {
  readonly url: string;
  /** Chat requests answered so far. */
  readonly chatRequests: () => number;
  /** The body of the first chat request (to send the same prompt and tools from a baseline). */
  readonly firstChatBody: () => unknown;
  stop(): Promise<void>;
}

const MODELS: FakeModel[] = [BENCH_MODEL];

/**
 * Every run gets `steps - 1` `convert_units` turns, then `finish_task`; `delayMs` before each
 * chat answer stands in for a model's time (none by default).
 */
export async function startKeyedLlmServer(
  steps: number,
  options: { readonly delayMs?: number } = {},
): Promise<KeyedLlmServer> {
  let chats = 0;
  let first: unknown;
  const sockets = new Set<Socket>();
  const answer = (method: string, path: string, raw: string): Answer => {
    if (method !== 'POST' || path !== '/v1/chat/completions')
      return lmStudioCatalog(method, path, MODELS, false) ?? lmStudioUnknownRoute(method, path);
    chats += 1;
    const body = JSON.parse(raw) as { messages: { role: string }[]; stream?: boolean };
    first ??= body;
    if (body.stream !== true) return jsonAnswer(400, { error: 'bench: expected a streaming request' });
    const done = body.messages.filter((m) => m.role === 'tool').length;
    const turn = done < steps - 1 ? CONVERT_TURN : FINISH_TURN;
    if (!('reply' in turn)) throw new Error('bench: a scripted turn without a reply');
    const reply = resolveReply(turn.reply, estimatePromptTokens(body));
    const ctx = { model: MODEL_ID, stream: true, includeUsage: true, promptTokens: reply.usage.prompt };
    const frames = openAiStreamFrames(reply, defaultStyle('lm_studio'), ctx);
    return {
      kind: 'stream',
      contentType: 'text/event-stream',
      frames: [...frames.body, ...frames.tail],
      cut: false,
    };
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = new URL(req.url ?? '/', 'http://bench').pathname;
    if (options.delayMs !== undefined && path === '/v1/chat/completions')
      await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    await write(res, answer(req.method ?? 'GET', path, Buffer.concat(chunks).toString('utf8')));
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`keyed fake: ${String(error)}`);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('bench: no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    chatRequests: () => chats,
    firstChatBody: () => first,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

// As the fake writes: one frame per write, yielding between frames like a token stream.
async function write(res: ServerResponse, answer: Answer): Promise<void> {
  if (answer.kind === 'hang') throw new Error('bench: the keyed fake never hangs');
  if (answer.kind === 'body') {
    res.writeHead(answer.status, { 'Content-Type': answer.contentType });
    res.end(answer.body);
    return;
  }
  res.writeHead(200, { 'Content-Type': answer.contentType, 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  for (const frame of answer.frames) {
    await new Promise<void>((resolve) => res.write(frame, () => resolve()));
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  res.end();
}
