import { describe, expect, it } from 'vitest';
import { autoEscalation } from '../../../src/application/models/auto-escalation.ts';
import type { ModelCard } from '../../../src/application/models/model-card.ts';
import type { BackendProbe, CatalogModel } from '../../../src/application/ports.ts';
import { FabricError } from '../../../src/domain/errors.ts';

const OL = 'http://ol:11434';
const CLOUD = 'https://api.example/v1';

function m(id: string, paramsB: number, backend: 'ollama' | 'openai' = 'ollama'): CatalogModel {
  return {
    id,
    backend,
    baseUrl: backend === 'ollama' ? OL : CLOUD,
    type: 'llm',
    toolUse: true,
    loaded: true,
    paramsB,
    contextLength: undefined,
    maxContextLength: undefined,
  };
}

function probe(backend: 'ollama' | 'openai', models: CatalogModel[], ok = true): BackendProbe {
  return { backend, baseUrl: backend === 'ollama' ? OL : CLOUD, ok, latencyMs: 3, error: undefined, models };
}

const card = (
  id: string,
  tools: ModelCard['tools'],
  score: number,
  battery: ModelCard['battery'] = {},
): ModelCard => ({
  model: id,
  backend: 'ollama',
  baseUrl: OL,
  serverVersion: null,
  quantisation: null,
  probedAt: '2026-11-20T10:00:00.000Z',
  tools,
  dialect: tools === 'dialect' ? 'hermes' : null,
  score,
  probes: [],
  tokens: { prompt: 0, completion: 0 },
  battery,
});

const local = probe('ollama', [m('small:3b', 3), m('mid:8b', 8), m('big:32b', 32), m('new:14b', 14)]);
const hosted = probe('openai', [m('gpt-5-mini', 0, 'openai')]);
const cards = [
  card('small:3b', 'none', 0.2),
  card('mid:8b', 'native', 1),
  card('big:32b', 'dialect', 0.8, { rust: { passRate: 0.9, runs: 10, at: '2026-11-21T00:00:00.000Z' } }),
];

describe('daemon.models: auto (SPEC §20)', () => {
  it("puts a battery's pass rate for the daemon's specialist before a probe score, and leaves out the unable and the unmeasured", () => {
    const order = autoEscalation([local], ['auto'], { cards, specialist: 'rust' });
    expect(order.models).toEqual(['big:32b', 'mid:8b']);
    expect(order.steps[0]?.measurement).toBe('battery pass rate 0.9 for rust over 10 runs (2026-11-21)');
    expect(order.steps[1]?.measurement).toBe('probe score 1 with native tool calls (probed 2026-11-20)');
    expect(order.leftOut).toEqual([
      { model: 'small:3b', why: `measured unable to call tools on ollama ${OL}` },
      { model: 'new:14b', why: 'no measurement: `fabric models probe new:14b` measures it' },
    ]);
    // Another specialist: no battery for it, the probe score decides.
    expect(autoEscalation([local], ['auto'], { cards, specialist: 'units' }).models).toEqual([
      'mid:8b',
      'big:32b',
    ]);
  });

  it('tries a hosted model only when named, after every local one, wherever it is named', () => {
    const order = autoEscalation([local, hosted], ['gpt-5-mini', 'auto'], { cards, specialist: 'rust' });
    expect(order.models).toEqual(['big:32b', 'mid:8b', 'gpt-5-mini']);
    expect(order.steps.at(-1)).toEqual({
      model: 'gpt-5-mini',
      server: null,
      measurement: 'named in daemon.models',
    });
    expect(autoEscalation([local, hosted], ['auto'], { cards, specialist: 'rust' }).models).not.toContain(
      'gpt-5-mini',
    );
  });

  it('refuses with nothing measured able and nothing named, saying how to measure', () => {
    const refuse = (probes: BackendProbe[]) => {
      try {
        autoEscalation(probes, ['auto'], { cards: [card('small:3b', 'none', 0.2)] });
      } catch (error) {
        return error as FabricError;
      }
      throw new Error('not refused');
    };
    const error = refuse([local]);
    expect(error).toBeInstanceOf(FabricError);
    expect(error.code).toBe('model_not_found');
    expect(error.message).toMatch(
      /^daemon\.models is auto, but no local model was measured able to call tools/,
    );
    expect(error.message).toContain('Run `fabric models probe`');
    expect(refuse([probe('ollama', [], false)]).code).toBe('backend_unavailable');
  });
});
