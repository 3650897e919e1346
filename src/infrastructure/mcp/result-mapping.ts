import { ToolError } from '../../domain/errors.ts';

/** A `tools/call` result as servers send it (content blocks, structured content, error flag). */
export interface McpCallResult {
  readonly content?: readonly unknown[] | undefined;
  readonly structuredContent?: unknown;
  readonly isError?: boolean | undefined;
  /** Protocol 2024-10-07 and older answered with `toolResult` instead of content. */
  readonly toolResult?: unknown;
}

type Block = Record<string, unknown>;

/**
 * Turns an MCP tool result into the text of a tool message. Text blocks pass through; images,
 * audio and binary resources become a short description (the loop's models read text only);
 * structured content is appended as JSON unless a text block already carries it. A result
 * flagged `isError` throws `ToolError`, so the model sees it as a failed call.
 */
export function mapToolResult(result: McpCallResult, label: string): string {
  const blocks = (result.content ?? []).filter(
    (block): block is Block => block !== null && typeof block === 'object',
  );
  const parts = blocks.map(describeBlock);
  const structured = result.structuredContent;
  if (structured !== undefined && !redundant(structured, blocks, parts.join('\n'))) {
    parts.push(JSON.stringify(structured));
  }
  if (parts.length === 0 && result.toolResult !== undefined) parts.push(JSON.stringify(result.toolResult));
  const text = parts.join('\n').trim();
  if (result.isError === true) {
    throw new ToolError(`${label} reported an error: ${text === '' ? '(no details)' : text}`);
  }
  return text === '' ? '(the tool returned no content)' : text;
}

function describeBlock(block: Block): string {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
    case 'audio':
      return `[${block.type}: ${str(block.mimeType, 'unknown type')}, ${base64Bytes(block.data)} bytes, not shown]`;
    case 'resource_link':
      return `[resource link: ${str(block.name, '')} ${str(block.uri, '')}${
        typeof block.description === 'string' ? ` (${block.description})` : ''
      }]`;
    case 'resource': {
      const resource = (block.resource ?? {}) as Block;
      if (typeof resource.text === 'string') return `[resource ${str(resource.uri, '')}]\n${resource.text}`;
      return `[resource: ${str(resource.uri, '')}, ${str(resource.mimeType, 'binary')}, ${base64Bytes(
        resource.blob,
      )} bytes, not shown]`;
    }
    default:
      return `[${str(block.type, 'unknown')} content, not shown]`;
  }
}

/**
 * True when the text blocks already say what the structured content says: one of them is its
 * JSON serialisation (the spec's advice), or every value in it appears in the text (the
 * filesystem server's `{ content: <the text> }`). Sending both would double the tokens.
 */
function redundant(structured: unknown, blocks: readonly Block[], text: string): boolean {
  const json = JSON.stringify(structured);
  for (const block of blocks) {
    if (block.type !== 'text' || typeof block.text !== 'string') continue;
    try {
      if (JSON.stringify(JSON.parse(block.text)) === json) return true;
    } catch {
      // Not JSON: compare values below.
    }
  }
  const values = leaves(structured);
  return values.length > 0 && values.every((value) => text.includes(value));
}

function leaves(value: unknown): string[] {
  if (typeof value === 'string') return value.trim() === '' ? [] : [value.trim()];
  if (typeof value === 'number' || typeof value === 'boolean') return [String(value)];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(leaves);
  return [];
}

function str(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}

function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}
