import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { showArgv, showText } from '../../src/domain/show-argv.ts';

/** The words bash reads back from `shown`: what a person who pastes it would run. */
function bashWords(shown: string): string[] {
  const out = execFileSync('bash', ['--norc', '--noprofile', '-c', `printf '%s\\0' ${shown}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C.UTF-8' },
  });
  return out.split('\0').slice(0, -1);
}

const HOSTILE: readonly (readonly string[])[] = [
  ['cargo', 'tree', '-i', 'x\u001b[2K\r  `cargo tree --depth 1`', '-e', 'features'],
  ['cargo', 'tree', '-p', 'foo bar'],
  ['cargo tree -e features'],
  ['echo', "it's", '"quoted"', '$HOME', '`id`', '*', '~', '#x', 'a\\b'],
  ['echo', '', 'bell\u0007', 'del\u007f', 'c1\u0085\u009b', 'nul\u0000x'],
  ['echo', 'a\u202eb', 'z\u200bw', 'i\u2066j\u2069', 'bom\ufeff', 'tab\there', 'line\nnext'],
  ['echo', "mixed'\u001b\\", 'tag\u{e0041}', 'caf\u00e9'],
];

describe('showArgv', () => {
  it('leaves plain words bare and joins them with single spaces', () => {
    expect(showArgv(['cargo', 'tree', '-e', 'features'])).toBe('cargo tree -e features');
    expect(showArgv(['cargo', 'check', 'src/lib.rs', '--target-dir=./t', 'user@host:1'])).toBe(
      'cargo check src/lib.rs --target-dir=./t user@host:1',
    );
    expect(showArgv([])).toBe('');
  });

  it('single-quotes a word with spaces, so one word and several never read the same', () => {
    expect(showArgv(['cargo', 'tree', '-p', 'foo bar'])).toBe("cargo tree -p 'foo bar'");
    expect(showArgv(['cargo', 'tree', '-p', 'foo', 'bar'])).toBe('cargo tree -p foo bar');
    expect(showArgv(['cargo tree -e features'])).toBe("'cargo tree -e features'");
  });

  it("quotes shell syntax and writes an embedded quote as '\\''", () => {
    expect(showArgv(['echo', "it's", '$HOME', '`id`', '*', '~', 'a;b', 'a\\b'])).toBe(
      `echo 'it'\\''s' '$HOME' '\`id\`' '*' '~' 'a;b' 'a\\b'`,
    );
  });

  it("shows an empty word as ''", () => {
    expect(showArgv(['printf', '', 'x'])).toBe("printf '' x");
  });

  it('quotes a first word with = so that it reads as the program, not an assignment', () => {
    expect(showArgv(['FOO=bar', 'cargo'])).toBe("'FOO=bar' cargo");
    expect(showArgv(['env', 'FOO=bar'])).toBe('env FOO=bar');
  });

  it('makes ESC and CR visible, so a word cannot rewrite the line a person reads', () => {
    const shown = showArgv(['cargo', 'tree', '-i', 'x\u001b[2K\r  `cargo tree --depth 1`', '-e', 'features']);
    expect(shown).toBe("cargo tree -i $'x\\e[2K\\r  `cargo tree --depth 1`' -e features");
  });

  it('escapes every C0 control, DEL and C1 control', () => {
    expect(showArgv(['a\u0007b\u0008\t\n\u000b\u000c'])).toBe("$'a\\ab\\b\\t\\n\\v\\f'");
    expect(showArgv(['\u0000\u0001\u001f\u007f'])).toBe("$'\\x00\\x01\\x1f\\x7f'");
    expect(showArgv(['\u0080\u0085\u009b\u009f'])).toBe("$'\\u0080\\u0085\\u009b\\u009f'");
  });

  it('escapes bidi overrides, isolates, zero-width characters and the BOM', () => {
    expect(showArgv(['a\u202eb'])).toBe("$'a\\u202eb'");
    expect(showArgv(['\u202a\u202b\u202c\u202d'])).toBe("$'\\u202a\\u202b\\u202c\\u202d'");
    expect(showArgv(['\u2066\u2067\u2068\u2069'])).toBe("$'\\u2066\\u2067\\u2068\\u2069'");
    expect(showArgv(['\u200b\u200c\u200d\u200e\u200f\ufeff'])).toBe(
      "$'\\u200b\\u200c\\u200d\\u200e\\u200f\\ufeff'",
    );
    expect(showArgv(['tag\u{e0041}'])).toBe("$'tag\\U000e0041'");
  });

  it('escapes backslashes and quotes inside $-quotes, and keeps printable letters', () => {
    expect(showArgv(["it's\u001b\\"])).toBe("$'it\\'s\\e\\\\'");
    expect(showArgv(['café'])).toBe("'café'");
    expect(showArgv(['café\r'])).toBe("$'café\\r'");
  });

  it('shows nothing a terminal acts on or hides', () => {
    for (const argv of HOSTILE)
      expect(showArgv(argv)).not.toMatch(
        /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/,
      );
  });

  it.skipIf(!existsSync('/bin/bash') && !existsSync('/usr/bin/bash'))(
    'is read back by bash as the same words',
    () => {
      for (const argv of HOSTILE) {
        // bash cannot hold a NUL in a word: compare up to it, as exec would.
        const expected = argv.map((word) => word.split('\u0000')[0]);
        expect(bashWords(showArgv(argv))).toEqual(expected);
      }
    },
  );
});

describe('showText', () => {
  it('makes control and invisible characters visible and leaves the rest', () => {
    expect(showText('stop\u001b[2K\rnow\u0007')).toBe('stop\\e[2K\\rnow\\a');
    expect(showText('a\nb\tc\u007f\u0085\u202e')).toBe('a\\nb\\tc\\x7f\\u0085\\u202e');
    expect(showText("plain text, it's \\ fine — café")).toBe("plain text, it's \\ fine — café");
  });
});
