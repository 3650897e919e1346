import { readFile } from 'node:fs/promises';

/** The prompt's text lives beside the pack's other material, in `packs/rust/`. */
const PROMPT_URL = new URL('../../../../packs/rust/system-prompt.md', import.meta.url);

/** Loads the Rust compositor engineer's system prompt. */
export async function loadRustSystemPrompt(): Promise<string> {
  return (await readFile(PROMPT_URL, 'utf8')).trim();
}
