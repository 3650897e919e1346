import { describe, expect, it } from 'vitest';
import type { BackendProbe, CatalogModel } from '../../../src/application/ports.ts';
import { isCandidate, resolveModel, sameModel } from '../../../src/application/models/resolve-model.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { ModelCard } from '../../../src/application/models/model-card.ts';

const LM = 'http://lm:1234';
const OL = 'http://ol:11434';

function m(id: string, fields: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id,
    backend: fields.backend ?? (id.includes(':') ? 'ollama' : 'lm_studio'),
    baseUrl: fields.baseUrl ?? (id.includes(':') ? OL : LM),
    type: 'llm',
    toolUse: undefined,
    loaded: undefined,
    paramsB: undefined,
    contextLength: undefined,
    maxContextLength: undefined,
    ...fields,
  };
}

function probe(backend: 'lm_studio' | 'ollama', models: CatalogModel[], ok = true): BackendProbe {
  return {
    backend,
    baseUrl: backend === 'lm_studio' ? LM : OL,
    ok,
    latencyMs: 3,
    error: ok ? undefined : 'connect ECONNREFUSED',
    models,
  };
}

function choose(probes: BackendProbe[], options: Parameters<typeof resolveModel>[1] = {}): string {
  return resolveModel(probes, options).model.id;
}

function failure(probes: BackendProbe[], options: Parameters<typeof resolveModel>[1] = {}): FabricError {
  try {
    resolveModel(probes, options);
  } catch (error) {
    if (error instanceof FabricError) return error;
    throw error;
  }
  throw new Error('expected resolveModel to fail');
}

describe('sameModel (Ollama :latest rule)', () => {
  it('treats a name without a tag as :latest, and compares case-insensitively', () => {
    expect(sameModel('llama3.2', 'llama3.2:latest')).toBe(true);
    expect(sameModel('Llama3.2:LATEST', 'llama3.2')).toBe(true);
    expect(sameModel('qwen/qwen3-coder-30b', 'qwen/qwen3-coder-30b')).toBe(true);
    expect(sameModel('hf.co/user/repo:Q4_K_M', 'hf.co/user/repo:q4_k_m')).toBe(true);
  });

  it('keeps other tags apart', () => {
    expect(sameModel('qwen3', 'qwen3:8b')).toBe(false);
    expect(sameModel('qwen3:8b', 'qwen3:14b')).toBe(false);
    expect(sameModel('user/model', 'model')).toBe(false);
  });
});

describe('resolveModel', () => {
  it('uses the configured model when a healthy backend has it, with the :latest rule', () => {
    const probes = [
      probe('ollama', [
        m('llama3.2:latest', { toolUse: true }),
        m('qwen3:8b', { toolUse: true, paramsB: 8 }),
      ]),
    ];
    const choice = resolveModel(probes, { configuredModel: 'llama3.2' });
    expect(choice.model.id).toBe('llama3.2:latest');
    expect(choice.reason).toMatch(/^configured model llama3\.2, found on ollama http:\/\/ol:11434/);
  });

  it('prefers the loaded copy when the configured model is on several backends', () => {
    const probes = [
      probe('lm_studio', [m('qwen3:8b', { backend: 'lm_studio', baseUrl: LM, loaded: false })]),
      probe('ollama', [m('qwen3:8b', { loaded: true })]),
    ];
    expect(resolveModel(probes, { configuredModel: 'qwen3:8b' }).model.backend).toBe('ollama');
  });

  it('falls back to the best available when the configured model is missing, and says so', () => {
    const probes = [probe('lm_studio', [m('a', { toolUse: true })])];
    const choice = resolveModel(probes, { configuredModel: 'qwen/qwen3-coder-30b' });
    expect(choice.model.id).toBe('a');
    expect(choice.reason).toMatch(
      /^configured model qwen\/qwen3-coder-30b is not on any backend; best available/,
    );
  });

  it('ignores a configured model on a backend that is down', () => {
    const probes = [
      probe('lm_studio', [m('wanted', { toolUse: true })], false),
      probe('ollama', [m('x:1', { toolUse: true })]),
    ];
    expect(choose(probes, { configuredModel: 'wanted' })).toBe('x:1');
  });

  it('fails a --model that no backend has, without falling back', () => {
    const error = failure([probe('lm_studio', [m('a', { toolUse: true })])], { flagModel: 'nope' });
    expect(error.code).toBe('model_not_found');
    expect(error.message).toContain('No backend has the model "nope" given with --model.');
    expect(error.message).toContain('lm_studio http://lm:1234: a');
  });

  it('fails a --model or a configured model as backend_unavailable when no server answered at all', () => {
    const down = [probe('lm_studio', [], false), probe('ollama', [], false)];
    const flag = failure(down, { flagModel: 'nope' });
    expect(flag.code).toBe('backend_unavailable');
    expect(flag.message).toContain('No model server answered, so the model "nope" given with --model');
    expect(flag.message).toMatch(/lms server start.*ollama serve/s);
    expect(failure(down, { configuredModel: 'wanted' }).code).toBe('backend_unavailable');
  });

  it('never picks an embedding model or one known to lack tools', () => {
    const probes = [
      probe('ollama', [
        m('nomic-embed-text:latest', { type: 'embedding', paramsB: 0.137, loaded: true }),
        m('deepseek-r1:7b', { toolUse: false, paramsB: 7.6, loaded: true }),
        m('qwen3:32b', { paramsB: 32, loaded: false }),
      ]),
    ];
    expect(choose(probes)).toBe('qwen3:32b');
    expect(isCandidate(m('e', { type: 'embedding' }))).toBe(false);
    expect(isCandidate(m('t', { toolUse: false }))).toBe(false);
  });

  it('ranks tool-capable before unknown, then loaded before unloaded, then smallest', () => {
    const unknownLoadedSmall = m('u', { toolUse: undefined, loaded: true, paramsB: 1 });
    const toolsUnloadedBig = m('t1', { toolUse: true, loaded: false, paramsB: 70 });
    const toolsLoadedBig = m('t2', { toolUse: true, loaded: true, paramsB: 30 });
    const toolsLoadedSmall = m('t3', { toolUse: true, loaded: true, paramsB: 8 });
    const toolsLoadedUnknownSize = m('t4', { toolUse: true, loaded: true });
    const all = [
      unknownLoadedSmall,
      toolsUnloadedBig,
      toolsLoadedBig,
      toolsLoadedUnknownSize,
      toolsLoadedSmall,
    ];
    expect(choose([probe('lm_studio', all)])).toBe('t3');
    expect(choose([probe('lm_studio', [unknownLoadedSmall, toolsUnloadedBig])])).toBe('t1');
    expect(choose([probe('lm_studio', [toolsLoadedUnknownSize, toolsLoadedBig])])).toBe('t2');
    expect(
      choose([probe('lm_studio', [m('a', { paramsB: 8 }), m('b', { loaded: true, paramsB: 70 })])]),
    ).toBe('b');
  });

  it('explains the choice: capability, load state, size and where', () => {
    const choice = resolveModel(
      [probe('ollama', [m('bge-m3:latest', { toolUse: true, loaded: true, paramsB: 0.5667 })])],
      {},
    );
    expect(choice.reason).toBe(
      'best available: bge-m3:latest (tool-capable, loaded, 0.567B parameters), on ollama http://ol:11434',
    );
  });

  it('fails clearly when only embedding and tool-less models exist, saying what each server had', () => {
    const error = failure([
      probe('lm_studio', [m('text-embedding-nomic-embed-text-v1.5', { type: 'embedding' })]),
      probe('ollama', [m('deepseek-r1:7b', { toolUse: false })]),
    ]);
    expect(error.code).toBe('model_not_found');
    expect(error.message).toContain('No tool-capable chat model is available (2 models seen');
    expect(error.message).toContain(
      'lm_studio http://lm:1234: text-embedding-nomic-embed-text-v1.5 (embedding)',
    );
    expect(error.message).toContain('ollama http://ol:11434: deepseek-r1:7b (no tools)');
    expect(error.message).toMatch(/lms load .*ollama pull/s);
  });

  it('fails clearly when no backend answered, naming each one and why', () => {
    const error = failure([probe('lm_studio', [], false), probe('ollama', [], false)]);
    expect(error.code).toBe('backend_unavailable');
    expect(error.message).toContain('No model server answered');
    expect(error.message).toContain('lm_studio http://lm:1234: unreachable (connect ECONNREFUSED)');
    expect(error.message).toContain('ollama http://ol:11434: unreachable');
    expect(error.message).toMatch(/lms server start.*ollama serve/s);
    expect(error.message).not.toContain('lms load');
  });

  it('fails when the backends answer but have no models at all', () => {
    const error = failure([probe('lm_studio', []), probe('ollama', [])]);
    expect(error.code).toBe('model_not_found');
    expect(error.message).toContain('lm_studio http://lm:1234: no models');
  });
});

describe('resolveModel with model cards (SPEC §20)', () => {
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
  const models = [
    m('small:3b', { toolUse: true, paramsB: 3 }),
    m('mid:8b', { toolUse: true, paramsB: 8 }),
    m('big:32b', { toolUse: true, paramsB: 32 }),
  ];

  it('skips a model measured unable to call tools, even with no measured best, and keeps §5 order after it', () => {
    const cards = [card('small:3b', 'none', 0.3)];
    expect(choose([probe('ollama', models)], { measured: { cards } })).toBe('mid:8b');
  });

  it("prefers the specialist's battery pass rate over a probe score, and names it with its date", () => {
    const cards = [
      card('mid:8b', 'native', 1),
      card('big:32b', 'dialect', 0.8, { rust: { passRate: 0.6, runs: 5, at: '2026-11-21T00:00:00.000Z' } }),
    ];
    const choice = resolveModel([probe('ollama', models)], { measured: { cards, specialist: 'rust' } });
    expect(choice.model.id).toBe('big:32b');
    expect(choice.reason).toContain('battery pass rate 0.6 for rust over 5 runs (2026-11-21)');
    // Another specialist has no battery figures: the probe score decides.
    expect(choose([probe('ollama', models)], { measured: { cards, specialist: 'units' } })).toBe('mid:8b');
  });

  it('refuses when every candidate was measured unable, and says so', () => {
    const cards = models.map((model) => card(model.id, 'none', 0.2));
    expect(failure([probe('ollama', models)], { measured: { cards } }).message).toContain(
      '3 models measured unable to call tools',
    );
  });

  it('obeys a configured model measured unable', () => {
    const cards = [card('small:3b', 'none', 0.3)];
    expect(choose([probe('ollama', models)], { configuredModel: 'small:3b', measured: { cards } })).toBe(
      'small:3b',
    );
  });
});

describe('resolveModel for a resumed run (SPEC §18)', () => {
  const LM2 = 'http://lm2:1234';
  const servers = (first: CatalogModel[], second: CatalogModel[], firstOk = true): BackendProbe[] => [
    { ...probe('lm_studio', first, firstOk), baseUrl: LM },
    { ...probe('lm_studio', second), baseUrl: LM2 },
  ];
  const previous = { model: 'coder', server: `lm_studio ${LM}` };

  it('keeps the server the run was on while it has the model, though another has it loaded', () => {
    const choice = resolveModel(
      servers(
        [m('coder', { toolUse: true, loaded: false })],
        [m('coder', { baseUrl: LM2, loaded: true, toolUse: true })],
      ),
      { previous },
    );
    expect(choice.model.baseUrl).toBe(LM);
    expect(choice.reason).toBe(`the server the run was on: coder on lm_studio ${LM}`);
  });

  it('takes the same model on another server when its server no longer has it, and says so', () => {
    const choice = resolveModel(
      servers([m('other', { toolUse: true })], [m('coder', { baseUrl: LM2, toolUse: true })]),
      { previous },
    );
    expect(choice.model).toMatchObject({ id: 'coder', baseUrl: LM2 });
    expect(choice.reason).toBe(
      `the server the run was on (lm_studio ${LM}) no longer serves coder; coder found on lm_studio ${LM2}`,
    );
  });

  it('takes the configured model, else the best available, when no server has its model', () => {
    const probes = servers([], [m('other', { baseUrl: LM2, toolUse: true })], false);
    expect(resolveModel(probes, { previous }).reason).toMatch(
      /^the server the run was on \(lm_studio http:\/\/lm:1234\) did not answer, and no other server has coder; best available: other/,
    );
    expect(resolveModel(probes, { previous, configuredModel: 'other' }).reason).toBe(
      `the server the run was on (lm_studio ${LM}) did not answer, and no other server has coder; configured model other, found on lm_studio ${LM2}`,
    );
  });
});
