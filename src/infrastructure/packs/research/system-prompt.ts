/**
 * Loads the research system prompt from packs/research/system-prompt.md, relative to this module
 * so it works from a checkout and from the installed package alike.
 */
import { readFile } from 'node:fs/promises';

const PROMPT_URL = new URL('../../../../packs/research/system-prompt.md', import.meta.url);

let cached: Promise<string> | undefined;

/** The research pack's system prompt; read once per process. */
export function loadResearchPrompt(): Promise<string> {
  cached ??= readFile(PROMPT_URL, 'utf8').then((text) => text.trim());
  return cached;
}
