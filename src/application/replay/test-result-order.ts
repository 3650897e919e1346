/**
 * libtest runs a crate's tests on several threads and prints each `test NAME ... OUTCOME` line
 * when that test ends, so two faithful runs of `cargo test` list the same results in different
 * orders (issue 34, item 5). Comparing results as results means comparing each test's outcome:
 * every unbroken block of such lines is put in name order, and nothing else is touched, so a test
 * whose outcome changed, or one that appeared or vanished, still differs.
 */
const TEST_LINE = /^test \S.* \.\.\. \S.*$/;

/** `text` with each block of consecutive libtest result lines sorted; other lines stay in place. */
export function sortTestResultLines(text: string): string {
  if (!text.includes(' ... ')) return text;
  const lines = text.split('\n');
  let start = 0;
  while (start < lines.length) {
    if (!TEST_LINE.test(lines[start] ?? '')) {
      start += 1;
      continue;
    }
    let end = start;
    while (end < lines.length && TEST_LINE.test(lines[end] ?? '')) end += 1;
    if (end - start > 1) lines.splice(start, end - start, ...lines.slice(start, end).sort());
    start = end;
  }
  return lines.join('\n');
}
