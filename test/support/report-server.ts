/**
 * A probe report (`fabric models probe --report DIR`, SPEC §20) served as a scripted server: the
 * quirks a user reports with a report folder become a fixture. Each card's server is imitated by
 * the fake of its kind (its catalog endpoints: the model, its window, its file digest, the server's
 * version), and every chat request is answered with the recorded reply to the same request — the
 * same model, tools and last user message, in the order they were recorded. A recorded timeout
 * hangs, a recorded error is the server's refusal, a request never recorded is a loud 500.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelCard, ProbeResult } from '../../src/application/models/model-card.ts';
import { type FakeLlmServer, startFakeLlmServer } from './fake-llm-server.ts';
import type { FakeFlavor, FakeModel, ScriptedTurn } from './fake-llm-types.ts';

/** A report's card as written (without exchanges) and the recorded exchanges of its probes. */
export interface ReportedModel {
  readonly card: Omit<ModelCard, 'probes'> & { readonly probes: readonly Omit<ProbeResult, 'exchanges'>[] };
  readonly exchanges: readonly RecordedExchange[];
}

interface RecordedExchange {
  readonly request: {
    readonly model: string;
    readonly messages: readonly { readonly role: string; readonly content: string }[];
    readonly tools: readonly string[];
  };
  readonly reply?: {
    readonly content: string;
    readonly reasoning: string;
    readonly tool_calls: readonly {
      id?: string;
      name: string;
      arguments: string | Record<string, unknown>;
    }[];
    readonly finish_reason: string;
    readonly usage: { readonly promptTokens: number; readonly completionTokens: number };
  };
  readonly error?: string;
}

/** The servers a report is served by (one per server it probed), and what each serves. */
export interface ServedReport {
  readonly models: readonly ReportedModel[];
  /** The fake standing in for the server a card was probed on (`<backend> <baseUrl>` of the card). */
  serverFor(card: Pick<ModelCard, 'backend' | 'baseUrl'>): FakeLlmServer;
  stop(): Promise<void>;
}

/** Reads a report folder: every `<key>.json` card with its `<key>.exchanges.json`. */
export async function readReport(dir: string): Promise<ReportedModel[]> {
  const files = (await readdir(dir)).sort();
  const cards = files.filter((file) => file.endsWith('.json') && !file.endsWith('.exchanges.json'));
  if (cards.length === 0) throw new Error(`${dir}: no card (<key>.json) here; is it a probe report?`);
  return Promise.all(
    cards.map(async (file) => {
      const card = JSON.parse(await readFile(join(dir, file), 'utf8')) as ReportedModel['card'];
      const exchangesFile = file.replace(/\.json$/, '.exchanges.json');
      if (!files.includes(exchangesFile)) throw new Error(`${dir}: ${file} has no ${exchangesFile}`);
      const probes = JSON.parse(await readFile(join(dir, exchangesFile), 'utf8')) as {
        exchanges: RecordedExchange[];
      }[];
      return { card, exchanges: probes.flatMap((probe) => probe.exchanges) };
    }),
  );
}

/** Serves the report in `dir`: one scripted fake per server its cards were probed on. */
export async function serveReport(dir: string): Promise<ServedReport> {
  const models = await readReport(dir);
  const groups = new Map<string, ReportedModel[]>();
  for (const model of models) {
    const key = `${model.card.backend} ${model.card.baseUrl}`;
    groups.set(key, [...(groups.get(key) ?? []), model]);
  }
  const servers = new Map<string, FakeLlmServer>();
  try {
    for (const [key, group] of groups) servers.set(key, await serveGroup(group));
  } catch (error) {
    await Promise.all([...servers.values()].map((server) => server.stop()));
    throw error;
  }
  return {
    models,
    serverFor(card) {
      const server = servers.get(`${card.backend} ${card.baseUrl}`);
      if (server === undefined) throw new Error(`the report has no server ${card.backend} ${card.baseUrl}`);
      return server;
    },
    stop: async () => {
      await Promise.all([...servers.values()].map((server) => server.stop()));
    },
  };
}

function serveGroup(group: readonly ReportedModel[]): Promise<FakeLlmServer> {
  const first = group[0]!.card;
  const flavor = flavorOf(first.backend);
  // The recorded turns per request, in the order they came.
  const turns = new Map<string, ScriptedTurn[]>();
  for (const { exchanges } of group) {
    for (const exchange of exchanges) {
      const key = requestKey(exchange.request.model, exchange.request.tools, exchange.request.messages);
      turns.set(key, [...(turns.get(key) ?? []), turnOf(exchange)]);
    }
  }
  return startFakeLlmServer({
    flavor,
    ...(flavor === 'ollama' && first.serverVersion !== null ? { ollamaVersion: first.serverVersion } : {}),
    models: group.map(({ card }) => fakeModelOf(card)),
    respond: ({ model, messages, tools }) => {
      const key = requestKey(model, tools, messages);
      const turn = turns.get(key)?.shift();
      return (
        turn ?? {
          status: 500,
          body: { error: `report server: no recorded exchange for ${key.slice(0, 200)}` },
        }
      );
    },
  });
}

function flavorOf(backend: string): FakeFlavor {
  if (backend === 'ollama' || backend === 'lm_studio') return backend;
  throw new Error(
    `a report from a ${backend} server cannot be served yet: the fakes imitate lm_studio and ollama (test/support/fake-llm-*.ts)`,
  );
}

/** The model as its server listed it when probed: its window (the window probe's), file and thinking. */
function fakeModelOf(card: ReportedModel['card']): FakeModel {
  const figures = (id: string) => card.probes.find((probe) => probe.id === id)?.figures ?? {};
  const window = figures('window').window;
  return {
    id: card.model,
    toolUse: true,
    ...(window === undefined ? {} : { contextLength: window }),
    ...(card.modelFile === null || card.modelFile === undefined ? {} : { digest: card.modelFile }),
    // `think: off` was sent only to a model its server said thinks.
    ...('think_off_honoured' in figures('reasoning') ? { thinking: true } : {}),
  };
}

/** A request by what the probe asks: the model, the tools offered, the last user message. */
function requestKey(
  model: string,
  tools: readonly string[],
  messages: readonly { readonly role: string; readonly content: string }[],
): string {
  const user = [...messages].reverse().find((message) => message.role === 'user')?.content ?? '';
  // A long message (the window probe's filler) is recorded cut, as probe-checks.ts `shorten` cuts it.
  const said = user.length > 400 ? `${user.slice(0, 200)}... (${user.length} characters)` : user;
  return JSON.stringify([model.replace(/:latest$/, ''), [...tools].sort(), said]);
}

function turnOf(exchange: RecordedExchange): ScriptedTurn {
  const { reply, error } = exchange;
  if (reply === undefined) {
    // The probe gave up waiting: the server never answered.
    if (error === undefined || /^no answer within/.test(error)) return { hang: true };
    return { status: 400, body: { error } };
  }
  return {
    reply: {
      content: reply.content,
      ...(reply.reasoning === '' ? {} : { reasoning: reply.reasoning }),
      toolCalls: reply.tool_calls.map((call) => ({
        name: call.name,
        arguments: call.arguments,
        ...(call.id === undefined ? {} : { id: call.id }),
      })),
      finishReason: reply.finish_reason,
      usage: { prompt: reply.usage.promptTokens, completion: reply.usage.completionTokens },
    },
  };
}
