import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SHIPPED_PROFILES, globMatches, resolveProfile } from '../../src/config/model-profiles.ts';
import { FabricConfigSchema, ModelProfileSchema } from '../../src/config/schema.ts';
import { ROOT } from '../support/fabric-cli.ts';

describe('model profiles (SPEC §16)', () => {
  it('matches a glob against the whole id or its last part, case-insensitively', () => {
    expect(globMatches('qwen3*', 'qwen/qwen3-coder-30b')).toBe(true);
    expect(globMatches('qwen3*', 'Qwen3-8B-GGUF')).toBe(true);
    expect(globMatches('*gpt-oss*', 'openai/gpt-oss-20b')).toBe(true);
    expect(globMatches('qwen3*', 'qwen2.5-coder:7b')).toBe(false);
    expect(globMatches('llama3.2', 'llama3x2')).toBe(false);
  });

  it('gives each family its shipped profile, the more specific first', () => {
    expect(resolveProfile('qwen/qwen3-coder-30b')).toMatchObject({
      matched: ['*qwen3*coder*'],
      settings: { temperature: 0.7, top_p: 0.8, top_k: 20 },
    });
    expect(resolveProfile('qwen3:8b').settings).toMatchObject({ temperature: 0.6, think: 'medium' });
    expect(resolveProfile('gpt-oss:20b').settings).toMatchObject({ temperature: 1, think: 'medium' });
    expect(resolveProfile('some-new-model')).toEqual({ matched: [], settings: {} });
  });

  it('lets the config override a shipped profile key by key, first matching glob first', () => {
    const resolved = resolveProfile('qwen3:8b', { 'qwen3:*': { think: 'off' }, '*': { temperature: 0.1 } });
    expect(resolved.matched).toEqual(['qwen3:*', '*qwen3*']);
    expect(resolved.settings).toMatchObject({ temperature: 0.6, top_k: 20, think: 'off' });
  });

  it("ships only profiles the config schema accepts, and the README's example is one", async () => {
    for (const shipped of SHIPPED_PROFILES)
      expect(v.safeParse(ModelProfileSchema, shipped.profile).success).toBe(true);
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .filter((b) => b.startsWith('profiles:'));
    expect(blocks).toHaveLength(1);
    const parsed = v.safeParse(FabricConfigSchema, { ...parse(blocks[0]!), specialists: {} });
    expect(parsed.issues).toBeUndefined();
  });
});
