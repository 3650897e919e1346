/**
 * What a person (and the model, in the daemon's feedback) needs from `cargo test` output: which
 * tests failed, where each panicked and with what message (the assertion and its `left`/`right`),
 * and the `test result:` line. The tail of the output alone loses the message: cargo
 * prints the panics in the middle, and since Rust 1.73 the message sits on the lines after
 * `panicked at FILE:LINE:COL:`.
 */

/** One failing test. */
export interface FailedTest {
  readonly name: string;
  /** `src/lib.rs:7:17`: where it panicked (or, for `should_panic`, the test); null when not printed. */
  readonly location: string | null;
  /** The panic message, line by line as printed (an assertion, then `left:` and `right:`). */
  readonly message: readonly string[];
}

/** The failures of a `cargo test` run. */
export interface CargoTestFailures {
  readonly failed: readonly FailedTest[];
  /** The `test result: FAILED. …` lines (one per test binary that failed). */
  readonly results: readonly string[];
}

/** Message lines kept per test: an assertion with its `left`/`right`, or a few lines of text. */
const MESSAGE_LINES = 8;
/** Tests described in full; the others are named only. */
const DESCRIBED_TESTS = 5;

// `test tests::x - should panic ... FAILED` names the test `tests::x`, as its section does.
const FAILED_LINE = /^test (.+?)(?: - should panic)? \.\.\. FAILED$/;
const SECTION = /^---- (.+?) stdout ----$/;
// Rust ≥ 1.73: `thread 'name' (tid) panicked at src/lib.rs:7:17:` and the message below it.
const PANIC_NEW = /^thread '.*?'(?: \(\d+\))? panicked at (.+:\d+:\d+):$/;
// Older: `thread 'name' panicked at 'message', src/lib.rs:7:17` (the message may span lines).
const PANIC_OLD = /^thread '.*?'(?: \(\d+\))? panicked at '(.*)$/;
const NO_PANIC = /^note: (test did not panic as expected)(?: at (.+:\d+:\d+))?$/;
const MESSAGE_END = /^(note: run with `RUST_BACKTRACE|stack backtrace:|note: Some details are omitted)/;

/** The failures in `cargo test` output; null when no test failed there (a build error, a pass). */
export function cargoTestFailures(output: string): CargoTestFailures | null {
  const lines = output.replace(/\r\n/g, '\n').split('\n');
  const names = lines.flatMap((line) => FAILED_LINE.exec(line)?.[1] ?? []);
  const results = lines.filter((line) => line.startsWith('test result: FAILED'));
  if (names.length === 0 && results.length === 0) return null;
  const sections = sectionsByTest(lines);
  // Sorted as cargo's own `failures:` list is: tests finish (and print FAILED) in any order.
  const failed = [...new Set(names)].sort().map((name) => describeSection(name, sections.get(name) ?? []));
  return { failed, results };
}

/** The failures as lines for a person: each test, where it panicked, its message; then the result. */
export function formatCargoTestFailures(failures: CargoTestFailures): string {
  const out: string[] = [];
  for (const test of failures.failed.slice(0, DESCRIBED_TESTS)) {
    out.push(`${test.name}${test.location === null ? ' failed' : ` panicked at ${test.location}`}:`);
    out.push(...test.message.map((line) => `  ${line}`));
  }
  const rest = failures.failed.slice(DESCRIBED_TESTS);
  if (rest.length > 0) out.push(`… and ${rest.length} more failed: ${rest.map((t) => t.name).join(', ')}`);
  out.push(...failures.results);
  return out.join('\n');
}

/** The failures on one line (a battery cell's headline): the first test's place and message, the counts. */
export function cargoTestFailuresLine(failures: CargoTestFailures): string {
  const [first] = failures.failed;
  const parts: string[] = [];
  if (first !== undefined) {
    const message = first.message.map((line) => line.trim()).filter((line) => line !== '');
    parts.push(
      `${first.name}${first.location === null ? ' failed' : ` panicked at ${first.location}`}` +
        (message.length === 0 ? '' : `: ${message.join(', ')}`),
    );
    if (failures.failed.length > 1) parts.push(`and ${failures.failed.length - 1} more failed`);
  }
  const counts = failures.results.map((line) => /FAILED\. ([^;]+; [^;]+)/.exec(line)?.[1] ?? line);
  return [parts.join(' '), ...counts].filter((part) => part !== '').join('; ');
}

/** Each `---- name stdout ----` section's lines, up to the next section or the `failures:` list. */
function sectionsByTest(lines: readonly string[]): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | null = null;
  for (const line of lines) {
    const start = SECTION.exec(line);
    if (start !== null) {
      current = [];
      sections.set(start[1] as string, current);
    } else if (line === 'failures:' || line.startsWith('test result:')) {
      current = null;
    } else {
      current?.push(line);
    }
  }
  return sections;
}

function describeSection(name: string, section: readonly string[]): FailedTest {
  for (let i = 0; i < section.length; i += 1) {
    const line = section[i] as string;
    const current = PANIC_NEW.exec(line);
    if (current !== null) {
      return { name, location: current[1] as string, message: messageLines(section.slice(i + 1)) };
    }
    const noPanic = NO_PANIC.exec(line);
    if (noPanic !== null) return { name, location: noPanic[2] ?? null, message: [noPanic[1] as string] };
    const old = PANIC_OLD.exec(line);
    if (old !== null) return oldPanic(name, [old[1] as string, ...section.slice(i + 1)]);
  }
  // No panic found: a crash, or output the test printed before it failed.
  return { name, location: null, message: messageLines(section.filter((line) => line.trim() !== '')) };
}

function messageLines(lines: readonly string[]): string[] {
  const end = lines.findIndex((line) => MESSAGE_END.test(line));
  const message = (end === -1 ? lines : lines.slice(0, end)).slice(0, MESSAGE_LINES);
  while (message.length > 0 && (message.at(-1) as string).trim() === '') message.pop();
  return message;
}

/** `'message', src/lib.rs:7:17`, the message possibly running over several lines. */
function oldPanic(name: string, lines: readonly string[]): FailedTest {
  const text = messageLines(lines).join('\n');
  const where = /^([\s\S]*)', (.+:\d+:\d+)$/m.exec(text);
  if (where === null) return { name, location: null, message: text.split('\n') };
  return { name, location: where[2] as string, message: (where[1] as string).split('\n') };
}
