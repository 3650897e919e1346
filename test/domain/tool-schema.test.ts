import { describe, expect, it } from 'vitest';
import { simpleToolSchema } from '../../src/domain/tool-schema.ts';

const schema = {
  type: 'object',
  $defs: { Path: { type: 'string', pattern: '^[a-z/]+$', format: 'uri-reference' } },
  properties: {
    path: { $ref: '#/$defs/Path' },
    content: { type: 'string', contentMediaType: 'text/plain' },
  },
  required: ['path', 'content'],
};

describe('simpleToolSchema (research/local-model-quirks-2.md Q2, Q4, Q22)', () => {
  it('inlines local references and drops the string constraints grammars choke on', () => {
    const simple = simpleToolSchema(schema) as { properties: Record<string, unknown>; $defs?: unknown };
    expect(simple.$defs).toBeUndefined();
    expect(simple.properties.path).toEqual({ type: 'string' });
  });

  it("keeps the fabric's own file-content annotation for reading calls", () => {
    const simple = simpleToolSchema(schema) as { properties: Record<string, unknown> };
    expect(simple.properties.content).toEqual({ type: 'string', contentMediaType: 'text/plain' });
  });

  it('sends no annotation a server has no use for', () => {
    const wire = simpleToolSchema(schema, { wire: true }) as { properties: Record<string, unknown> };
    expect(wire.properties.content).toEqual({ type: 'string' });
    expect(JSON.stringify(wire)).not.toMatch(/contentMediaType|contentEncoding|pattern|format|\$ref/);
  });
});
