/**
 * Turns a fetched body into text a model can read: HTML through Readability (on a linkedom DOM,
 * which runs on Node and Deno alike), readable text types as they are, everything else refused.
 */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { ToolError } from '../../../domain/errors.ts';

/** A page as the model sees it. */
export interface ReadablePage {
  readonly title: string;
  readonly text: string;
}

type Kind = 'html' | 'text' | 'sniff';

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
const TEXT_TYPES = new Set([
  'text/plain',
  'text/markdown',
  'text/x-markdown',
  'text/csv',
  'application/json',
]);

function kindOf(contentType: string): Kind | undefined {
  const mime = mimeType(contentType);
  if (mime === '') return 'sniff';
  if (HTML_TYPES.has(mime)) return 'html';
  if (TEXT_TYPES.has(mime) || mime.endsWith('+json')) return 'text';
  return undefined;
}

/** A refusal message for a Content-Type `fetch_url` cannot read, checked before the body is downloaded. */
export function refuseUnreadable(contentType: string): string | undefined {
  if (kindOf(contentType) !== undefined) return undefined;
  return (
    `fetch_url cannot read ${mimeType(contentType)} content; it reads HTML, plain text, markdown and JSON. ` +
    'Look for an HTML or text version of this source.'
  );
}

/** Extracts the title and readable text of a body of the given Content-Type. */
export function toReadablePage(bytes: Uint8Array, contentType: string, url: string): ReadablePage {
  const text = decode(bytes, contentType);
  let kind = kindOf(contentType);
  if (kind === 'sniff') kind = sniff(text);
  if (kind === 'html') return htmlToPage(text, url);
  if (kind === 'text') return { title: url, text: text.replace(/\r\n?/g, '\n').trim() };
  throw new ToolError(
    `${url} sent content without a recognisable type; fetch_url reads HTML, plain text, markdown and JSON.`,
  );
}

function mimeType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

function decode(bytes: Uint8Array, contentType: string): string {
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    // An unknown label: UTF-8 is the web's default and degrades to replacement characters.
    return new TextDecoder('utf-8').decode(bytes);
  }
}

function sniff(text: string): Kind | undefined {
  const head = text.slice(0, 1024);
  if (/^\s*<(!doctype html|html|head|body)[\s>]/i.test(head)) return 'html';
  // NUL or many replacement characters: binary, not text.
  if (head.includes('\u0000') || (head.match(/\uFFFD/g)?.length ?? 0) > 8) return undefined;
  return 'text';
}

function htmlToPage(html: string, url: string): ReadablePage {
  let { document } = parseHTML(html);
  // linkedom makes a bare fragment's first element the root (or leaves none); wrap it in a document.
  if (document.documentElement?.nodeName.toUpperCase() !== 'HTML') {
    ({ document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`));
  }
  const title = (document.title ?? '').trim() || url;
  for (const element of document.querySelectorAll('script, style, noscript, template, svg')) element.remove();
  let text = '';
  try {
    const article = new Readability<string>(document as unknown as Document, {
      serializer: (node) => blockText(node),
    }).parse();
    text = article?.content ?? '';
  } catch {
    // Readability gives up on some odd documents; the whole body is the fallback below.
  }
  if (text.trim() === '') {
    text = document.body === null ? '' : blockText(document.body as unknown as Node);
  }
  return { title, text: tidy(text) };
}

const BLOCKS = new Set(
  (
    'ADDRESS ARTICLE ASIDE BLOCKQUOTE BR DD DIV DL DT FIGCAPTION FIGURE FOOTER H1 H2 H3 H4 H5 H6 ' +
    'HEADER HR LI MAIN NAV OL P PRE SECTION TABLE TD TH TR UL'
  ).split(' '),
);

/** Text of a node with line breaks around block elements; iterative, so deep nesting cannot overflow. */
function blockText(root: Node): string {
  const out: string[] = [];
  const stack: (Node | string)[] = [root];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item === undefined) break;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    if (item.nodeType === 3) {
      // Source line breaks inside a paragraph are just spaces, except in preformatted text.
      const raw = item.textContent ?? '';
      out.push(insidePre(item) ? raw : raw.replace(/\s+/g, ' '));
      continue;
    }
    if (item.nodeType !== 1 && item.nodeType !== 9 && item.nodeType !== 11) continue;
    const block = BLOCKS.has(item.nodeName.toUpperCase());
    if (block) {
      out.push('\n');
      stack.push('\n');
    }
    if (item.nodeName.toUpperCase() === 'LI') out.push('- ');
    const children = Array.from(item.childNodes);
    for (let index = children.length - 1; index >= 0; index -= 1) {
      const child = children[index];
      if (child !== undefined) stack.push(child);
    }
  }
  return out.join('');
}

function insidePre(node: Node): boolean {
  for (let parent = node.parentNode; parent !== null; parent = parent.parentNode) {
    if (parent.nodeName.toUpperCase() === 'PRE') return true;
  }
  return false;
}

function tidy(text: string): string {
  return text
    .replace(/[^\S\n]+/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
