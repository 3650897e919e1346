/**
 * How a command and free text are shown to a person who decides on them (SPEC §19). A terminal
 * acts on control characters (ESC sequences erase and rewrite a line, CR returns to its start)
 * and a few Unicode characters reorder or hide text (bidi overrides, zero-width spaces), so a
 * model could make an approval prompt show one command while another waits for the "yes". Words
 * joined by spaces hide where one word ends (`-p 'foo bar'` and `-p foo bar`). What is shown
 * here is unambiguous: no character in it acts on a terminal or hides.
 */

/**
 * The argv as a POSIX shell would read it back: pasted into bash, zsh or ksh93 it is the same
 * words. Plain words stay bare (`cargo`, `-e`, `src/lib.rs`); other words are single-quoted
 * (`'foo bar'`, `'it'\''s'`, `''`); a word holding a control or invisible character is quoted
 * ANSI-C style with each such character escaped (`$'x\e[2K\r'`, `$'a\u202eb'`).
 */
export function showArgv(argv: readonly string[]): string {
  return argv.map((word, index) => showWord(word, index === 0)).join(' ');
}

/**
 * Free text (a steer message, a model's note) for one line on a terminal: every control or
 * invisible character is made visible as an escape (`\e`, `\r`, `\n`, `\x7f`, `\u202e`), other
 * characters, backslashes included, are left as they are: it is for reading, not for pasting.
 */
export function showText(text: string): string {
  let shown = '';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    shown += hidden(code) ? escapeOf(code) : char;
  }
  return shown;
}

/** Words a shell reads as themselves (Python's `shlex.quote` keeps the same set bare). */
const BARE = /^[A-Za-z0-9_@%+=:,./-]+$/;

function showWord(word: string, first: boolean): string {
  if (word === '') return "''";
  let special = false;
  for (const char of word) if (hidden(char.codePointAt(0) ?? 0)) special = true;
  if (special) {
    let quoted = '';
    for (const char of word) {
      const code = char.codePointAt(0) ?? 0;
      quoted += char === '\\' || char === "'" ? `\\${char}` : hidden(code) ? escapeOf(code) : char;
    }
    return `$'${quoted}'`;
  }
  // A first word with `=` would be read as an environment assignment, not as the program.
  if (BARE.test(word) && !(first && word.includes('='))) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The escapes bash's `$'...'` knows by letter, by code point. */
const NAMED: ReadonlyMap<number, string> = new Map([
  [0x07, '\\a'],
  [0x08, '\\b'],
  [0x09, '\\t'],
  [0x0a, '\\n'],
  [0x0b, '\\v'],
  [0x0c, '\\f'],
  [0x0d, '\\r'],
  [0x1b, '\\e'],
]);

/** An escape as bash's `$'...'` reads it; always full width, so a following hex digit is not taken in. */
function escapeOf(code: number): string {
  const named = NAMED.get(code);
  if (named !== undefined) return named;
  if (code < 0x80) return `\\x${hex(code, 2)}`;
  return code > 0xffff ? `\\U${hex(code, 8)}` : `\\u${hex(code, 4)}`;
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}

/**
 * A character a terminal acts on or that shows as nothing: C0 controls, DEL, C1 controls, the
 * soft hyphen, bidi marks, embeddings, overrides and isolates, zero-width and invisible format
 * characters, line and paragraph separators, the BOM, interlinear annotation marks, Unicode
 * tags (they smuggle invisible ASCII), and a lone surrogate half (not text at all).
 */
function hidden(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0xad ||
    code === 0x061c ||
    code === 0x180e ||
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0x2028 && code <= 0x202e) ||
    (code >= 0x2060 && code <= 0x206f) ||
    (code >= 0xd800 && code <= 0xdfff) ||
    code === 0xfeff ||
    (code >= 0xfff9 && code <= 0xfffb) ||
    (code >= 0xe0000 && code <= 0xe007f)
  );
}
