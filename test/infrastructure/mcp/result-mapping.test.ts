import { describe, expect, it } from 'vitest';
import { ToolError } from '../../../src/domain/errors.ts';
import { mapToolResult } from '../../../src/infrastructure/mcp/result-mapping.ts';

describe('mapToolResult', () => {
  it('joins text blocks', () => {
    const result = {
      content: [
        { type: 'text', text: 'one' },
        { type: 'text', text: 'two' },
      ],
    };
    expect(mapToolResult(result, 't')).toBe('one\ntwo');
  });

  it('describes images, audio and binary resources instead of inlining them', () => {
    const result = {
      content: [
        { type: 'image', mimeType: 'image/png', data: 'AAAA' },
        { type: 'audio', mimeType: 'audio/wav', data: 'AAA=' },
        {
          type: 'resource',
          resource: { uri: 'file:///x.bin', mimeType: 'application/zip', blob: 'AAAAAA==' },
        },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: 'inline text' } },
        { type: 'resource_link', name: 'readme', uri: 'file:///README.md' },
      ],
    };
    expect(mapToolResult(result, 't').split('\n')).toEqual([
      '[image: image/png, 3 bytes, not shown]',
      '[audio: audio/wav, 2 bytes, not shown]',
      '[resource: file:///x.bin, application/zip, 4 bytes, not shown]',
      '[resource file:///a.txt]',
      'inline text',
      '[resource link: readme file:///README.md]',
    ]);
  });

  it('appends structured content as JSON unless the text already carries it', () => {
    expect(mapToolResult({ content: [], structuredContent: { a: 1 } }, 't')).toBe('{"a":1}');
    expect(
      mapToolResult({ content: [{ type: 'text', text: '{ "a": 1 }' }], structuredContent: { a: 1 } }, 't'),
    ).toBe('{ "a": 1 }');
    expect(
      mapToolResult(
        { content: [{ type: 'text', text: 'file text' }], structuredContent: { content: 'file text' } },
        't',
      ),
    ).toBe('file text');
    expect(
      mapToolResult({ content: [{ type: 'text', text: 'Sunny' }], structuredContent: { temp: 21 } }, 't'),
    ).toBe('Sunny\n{"temp":21}');
  });

  it("throws a ToolError for an isError result, with the server's text", () => {
    const call = () =>
      mapToolResult({ content: [{ type: 'text', text: 'Access denied' }], isError: true }, 'MCP tool x');
    expect(call).toThrow(ToolError);
    expect(call).toThrow('MCP tool x reported an error: Access denied');
  });

  it('says so when a tool returns nothing', () => {
    expect(mapToolResult({ content: [] }, 't')).toBe('(the tool returned no content)');
    expect(mapToolResult({ toolResult: { ok: true } }, 't')).toBe('{"ok":true}');
  });
});
