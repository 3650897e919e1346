import { describe, expect, it } from 'vitest';
import { toCompatibleToolSchema } from '../../../src/infrastructure/mcp/schema-compat.ts';

describe('toCompatibleToolSchema', () => {
  it('passes a well-formed object schema through, without $schema', () => {
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { path: { type: 'string', description: 'a path' } },
      required: ['path'],
      additionalProperties: false,
    };
    expect(toCompatibleToolSchema(schema)).toEqual({
      type: 'object',
      properties: { path: { type: 'string', description: 'a path' } },
      required: ['path'],
      additionalProperties: false,
    });
  });

  it('adds type and properties when a server leaves them out', () => {
    expect(toCompatibleToolSchema({})).toEqual({ type: 'object', properties: {} });
    expect(toCompatibleToolSchema(undefined)).toEqual({ type: 'object', properties: {} });
    expect(toCompatibleToolSchema({ properties: { a: { type: 'number' } } })).toEqual({
      type: 'object',
      properties: { a: { type: 'number' } },
    });
  });

  it('flattens a top-level anyOf, requiring only what every variant requires', () => {
    const schema = {
      anyOf: [
        {
          type: 'object',
          properties: { id: { type: 'string' }, name: { type: 'string' } },
          required: ['id', 'name'],
        },
        { type: 'object', properties: { id: { type: 'string' }, url: { type: 'string' } }, required: ['id'] },
      ],
    };
    expect(toCompatibleToolSchema(schema)).toEqual({
      type: 'object',
      properties: { id: { type: 'string' }, name: { type: 'string' }, url: { type: 'string' } },
      required: ['id'],
    });
  });

  it('merges a top-level allOf, requiring what any part requires', () => {
    const schema = {
      allOf: [
        { properties: { a: { type: 'string' } }, required: ['a'] },
        { properties: { b: { type: 'string' } }, required: ['b'] },
      ],
    };
    expect(toCompatibleToolSchema(schema)).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string' } },
      required: ['a', 'b'],
    });
  });

  it('drops top-level keywords strict validators refuse, and required names with no property', () => {
    const schema = {
      type: ['object', 'null'],
      enum: [{}],
      not: { required: ['x'] },
      properties: { a: { type: 'string', enum: ['x', 'y'] } },
      required: ['a', 'ghost', 3],
    };
    expect(toCompatibleToolSchema(schema)).toEqual({
      type: 'object',
      properties: { a: { type: 'string', enum: ['x', 'y'] } },
      required: ['a'],
    });
  });
});
