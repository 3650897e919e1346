const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * A tool-call id of nine letters and digits: the one form every family's template accepts, as
 * Mistral-family templates refuse any other (research/local-model-quirks-2.md Q10).
 */
export function nineAlnumId(random: () => number = Math.random): string {
  let id = '';
  for (let i = 0; i < 9; i++) id += ALNUM[Math.floor(random() * ALNUM.length)] ?? 'a';
  return id;
}

/** Whether an id has the Mistral form. */
export function isNineAlnum(id: string): boolean {
  return /^[A-Za-z0-9]{9}$/.test(id);
}
