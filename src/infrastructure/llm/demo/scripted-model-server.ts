import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEMO_MODEL, demoTurn } from './demo-script.ts';

/** The demo's model server: its base URL (LM Studio's, without /v1) and how to stop it. */
export interface ScriptedModelServer {
  readonly url: string;
  stop(): Promise<void>;
}

const CONTEXT = 32_768;

/**
 * `fabric demo`'s model: an LM Studio-compatible server on 127.0.0.1 (a free port) that lists one
 * model, `demo-scripted`, and answers every chat request with the next turn of a fixed script
 * (demo-script.ts), streamed as LM Studio streams it. It speaks only the endpoints the fabric
 * uses: /v1/models, /api/v0/models[/id] and /v1/chat/completions; anything else gets LM Studio's
 * own answer to an unknown route.
 */
export async function startScriptedModelServer(): Promise<ScriptedModelServer> {
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => json(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://demo').pathname;
  const method = req.method ?? 'GET';
  const raw = await readBody(req);
  if (method === 'GET' && path === '/v1/models') {
    json(res, 200, { object: 'list', data: [{ id: DEMO_MODEL, object: 'model', owned_by: 'fabric-demo' }] });
    return;
  }
  if (method === 'GET' && path === '/api/v0/models') {
    json(res, 200, { object: 'list', data: [modelEntry()] });
    return;
  }
  if (method === 'GET' && path === `/api/v0/models/${DEMO_MODEL}`) {
    json(res, 200, modelEntry());
    return;
  }
  if (method === 'POST' && path === '/v1/chat/completions') {
    chat(res, raw);
    return;
  }
  // What LM Studio answers on a route it does not know: HTTP 200 with an error field.
  json(res, 200, { error: `Unexpected endpoint or method. (${method} ${path})` });
}

/** LM Studio's /api/v0 model entry: loaded, with tool use, so the fabric picks it without a load. */
function modelEntry(): Record<string, unknown> {
  return {
    id: DEMO_MODEL,
    object: 'model',
    type: 'llm',
    publisher: 'fabric-demo',
    arch: 'demo',
    compatibility_type: 'gguf',
    quantization: 'none',
    state: 'loaded',
    max_context_length: CONTEXT,
    loaded_context_length: CONTEXT,
    capabilities: ['tool_use'],
  };
}

interface ChatBody {
  readonly model?: string;
  readonly messages?: readonly { readonly role?: string }[];
  readonly stream_options?: { readonly include_usage?: boolean };
}

/** The next scripted turn, as LM Studio streams a tool call: the text, the call whole, the finish, usage. */
function chat(res: ServerResponse, raw: string): void {
  let body: ChatBody;
  try {
    body = JSON.parse(raw) as ChatBody;
  } catch {
    json(res, 400, { error: "'messages' field is required" });
    return;
  }
  const messages = body.messages ?? [];
  const turn = demoTurn(messages.filter((message) => message.role === 'assistant').length);
  const id = `chatcmpl-demo${randomUUID().replaceAll('-', '').slice(0, 20)}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created,
      model: DEMO_MODEL,
      system_fingerprint: DEMO_MODEL,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })}\n\n`;
  const call = {
    index: 0,
    id: String(100_000_000 + Math.floor(Math.random() * 800_000_000)),
    type: 'function',
    function: { name: turn.tool, arguments: JSON.stringify(turn.arguments) },
  };
  const prompt = Math.ceil(raw.length / 4);
  const completion = Math.ceil((turn.say.length + call.function.arguments.length) / 4);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk({ role: 'assistant', content: turn.say }, null));
  res.write(chunk({ tool_calls: [call] }, null));
  res.write(chunk({}, 'tool_calls'));
  if (body.stream_options?.include_usage === true) {
    res.write(
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: DEMO_MODEL,
        system_fingerprint: DEMO_MODEL,
        choices: [],
        usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
      })}\n\n`,
    );
  }
  res.end('data: [DONE]\n\n');
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
