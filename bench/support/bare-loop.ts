/**
 * The baselines: a tool loop written against the wire with nothing in between. `bareFetchRun`
 * streams, parses the SSE and appends tool results, as any client must; `nodeHttpRun` only moves
 * the same bytes over one keep-alive socket (the physical floor).
 */
import { Agent, request as httpRequest } from 'node:http';
import { type ChatShape, convertUnits, CONVERT_ARGS } from './units-script.ts';

type Message = Record<string, unknown>;

interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Takes a request slot; the returned function gives it back. */
export type Acquire = () => Promise<() => void>;

const noLimit: Acquire = async () => () => {};

/** One run: chat requests until the model calls `finish_task`. Returns the number of steps. */
export async function bareFetchRun(
  baseUrl: string,
  shape: ChatShape,
  options: { maxSteps: number; acquire?: Acquire },
): Promise<number> {
  const acquire = options.acquire ?? noLimit;
  const messages: Message[] = [
    { role: 'system', content: shape.system },
    { role: 'user', content: shape.task },
  ];
  for (let step = 1; step <= options.maxSteps; step += 1) {
    const release = await acquire();
    let turn: { content: string; calls: ToolCall[] };
    try {
      turn = await streamTurn(baseUrl, {
        model: shape.model,
        messages,
        tools: shape.tools,
        stream: true,
        stream_options: { include_usage: true },
      });
    } finally {
      release();
    }
    messages.push({
      role: 'assistant',
      content: turn.content === '' ? null : turn.content,
      tool_calls: turn.calls.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      })),
    });
    if (turn.calls.length === 0) throw new Error(`bench: step ${step} has no tool call`);
    for (const call of turn.calls) {
      const args = JSON.parse(call.arguments) as { value: number; from: string; to: string };
      if (call.name === 'finish_task') return step;
      messages.push({ role: 'tool', tool_call_id: call.id, content: convertUnits(args) });
    }
  }
  throw new Error(`bench: no finish_task within ${options.maxSteps} steps`);
}

async function streamTurn(baseUrl: string, body: object): Promise<{ content: string; calls: ToolCall[] }> {
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok || response.body === null)
    throw new Error(`bench: chat answered ${response.status}: ${await response.text()}`);
  let content = '';
  const calls: ToolCall[] = [];
  let finished = false;
  let buffer = '';
  const onEvent = (event: string) => {
    for (const line of event.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (data === '[DONE]') return;
      const chunk = JSON.parse(data) as {
        choices: {
          delta?: {
            content?: string | null;
            tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
          };
          finish_reason?: string | null;
        }[];
      };
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (choice.delta?.content) content += choice.delta.content;
      for (const part of choice.delta?.tool_calls ?? []) {
        let call = calls[part.index];
        if (call === undefined) {
          call = { id: '', name: '', arguments: '' };
          calls[part.index] = call;
        }
        if (part.id) call.id = part.id;
        if (part.function?.name) call.name += part.function.name;
        if (part.function?.arguments) call.arguments += part.function.arguments;
      }
      if (choice.finish_reason) finished = true;
    }
  };
  // A TextDecoder on the byte reader: a TextDecoderStream would add a stream stage per chunk.
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      onEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
    }
  }
  if (!finished) throw new Error('bench: the stream ended without a finish_reason');
  return { content, calls };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/**
 * The floor: the same `steps` requests, conversation growing as in a real run, over one
 * keep-alive socket; the answers are read to the end but not parsed.
 */
export async function nodeHttpRun(baseUrl: string, shape: ChatShape, steps: number): Promise<number> {
  const url = new URL('/v1/chat/completions', baseUrl);
  const messages: Message[] = [
    { role: 'system', content: shape.system },
    { role: 'user', content: shape.task },
  ];
  const args = JSON.stringify(CONVERT_ARGS);
  const result = convertUnits(CONVERT_ARGS);
  for (let step = 1; step <= steps; step += 1) {
    const body = JSON.stringify({
      model: shape.model,
      messages,
      tools: shape.tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    const text = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode === 200) resolve(text);
            else reject(new Error(`bench: chat answered ${res.statusCode}: ${text}`));
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    if (!text.endsWith('data: [DONE]\n\n')) throw new Error('bench: a stream ended early');
    const id = `call_${step}`;
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'convert_units', arguments: args } }],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: result });
  }
  return steps;
}

/**
 * A cap on requests in flight, granted to the lowest run index first, as the fabric's limiter
 * serves the runs in the order they started.
 */
export function priorityLimiter(max: number): (runIndex: number) => Acquire {
  let active = 0;
  const queue: { index: number; grant: () => void }[] = [];
  const release = () => {
    const next = queue.shift();
    if (next) next.grant();
    else active -= 1;
  };
  return (index) => async () => {
    if (active < max) active += 1;
    else
      await new Promise<void>((grant) => {
        const at = queue.findIndex((w) => w.index > index);
        queue.splice(at === -1 ? queue.length : at, 0, { index, grant });
      });
    return release;
  };
}
