import { describe, expect, it } from 'vitest';
import {
  refuseUnreadable,
  toReadablePage,
} from '../../../../src/infrastructure/packs/research/readable-text.ts';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const ARTICLE = `<!doctype html><html><head><title>The Smithay Book</title><style>p{}</style></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>Compositors</h1>
<p>Smithay is a library of building blocks for Wayland compositors written in Rust, and it handles much of the protocol work for you.</p>
<p>The backend module talks to DRM and KMS directly, so a compositor can drive displays without an X server underneath it.</p>
<ul><li>udev sessions</li><li>libinput devices</li></ul>
<script>document.write('tracking')</script></article></body></html>`;

describe('toReadablePage', () => {
  it('extracts the title and the article text of an HTML page, with paragraph breaks', () => {
    const page = toReadablePage(bytes(ARTICLE), 'text/html; charset=utf-8', 'https://example.test/book');
    expect(page.title).toBe('The Smithay Book');
    expect(page.text).toContain(
      'Smithay is a library of building blocks for Wayland compositors written in Rust',
    );
    expect(page.text).toMatch(/protocol work for you\.\n+The backend module/);
    expect(page.text).toContain('- udev sessions');
    expect(page.text).not.toContain('tracking');
  });

  it('reads an HTML fragment and a page Readability cannot score', () => {
    const page = toReadablePage(bytes('<p>just a short note</p>'), 'text/html', 'https://example.test/n');
    expect(page).toEqual({ title: 'https://example.test/n', text: 'just a short note' });
    const code = toReadablePage(bytes('<pre>fn main() {\n    run();\n}</pre>'), 'text/html', 'u');
    expect(code.text).toBe('fn main() {\nrun();\n}');
  });

  it('returns plain text, markdown and JSON as they are', () => {
    expect(toReadablePage(bytes('# Title\r\n\r\nBody'), 'text/markdown', 'u').text).toBe('# Title\n\nBody');
    expect(toReadablePage(bytes('{"a": 1}'), 'application/json', 'u').text).toBe('{"a": 1}');
    expect(toReadablePage(bytes('hello'), 'application/ld+json', 'u').text).toBe('hello');
  });

  it('honours the charset parameter', () => {
    const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9]);
    expect(toReadablePage(latin1, 'text/plain; charset=iso-8859-1', 'u').text).toBe('café');
  });

  it('sniffs a body sent without a Content-Type, and refuses binary', () => {
    expect(toReadablePage(bytes('<html><body><p>sniffed</p></body></html>'), '', 'u').text).toBe('sniffed');
    expect(toReadablePage(bytes('plain words'), '', 'u').text).toBe('plain words');
    expect(() => toReadablePage(new Uint8Array([0x89, 0x50, 0, 0, 1]), '', 'u')).toThrow(/recognisable type/);
  });
});

describe('refuseUnreadable', () => {
  it('accepts readable types and refuses the rest with a clear message', () => {
    for (const type of [
      'text/html',
      'application/xhtml+xml',
      'text/plain',
      'text/markdown',
      'application/json',
      '',
    ]) {
      expect(refuseUnreadable(type)).toBeUndefined();
    }
    expect(refuseUnreadable('application/pdf')).toMatch(
      /cannot read application\/pdf.*HTML, plain text, markdown and JSON/,
    );
    expect(refuseUnreadable('image/png; q=1')).toMatch(/image\/png/);
  });
});
