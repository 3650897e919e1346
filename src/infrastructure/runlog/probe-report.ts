/**
 * `fabric models probe --report DIR` (SPEC §20): each card and its raw exchanges as a folder a
 * user attaches to a bug report, and the test suite serves as a scripted server. Every key the
 * config holds, and anything shaped like one, is scrubbed before a byte is written.
 */
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { ModelCard } from '../../application/models/model-card.ts';
import { FabricError } from '../../domain/errors.ts';
import { cardFileName } from './model-card-files.ts';

const KEY_SHAPES: readonly RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /("?(?:api[_-]?key|authorization|x-api-key)"?\s*[:=]\s*")[^"]+/gi,
];

/** Text with every known secret and every key-shaped string replaced by `[redacted]`. */
export function scrubKeys(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  for (const shape of KEY_SHAPES) {
    out = out.replace(shape, (match, prefix: unknown) =>
      typeof prefix === 'string' && match.startsWith(prefix) && prefix.endsWith('"')
        ? `${prefix}[redacted]`
        : '[redacted]',
    );
  }
  return out;
}

/**
 * Writes the report: `<card>.json` (the card without exchanges) and `<card>.exchanges.json` (each
 * probe's requests and replies) per model, and a README. Written to a sibling folder and renamed,
 * so a report is whole or absent. DIR must not exist or be empty.
 */
export async function writeProbeReport(
  dir: string,
  cards: readonly ModelCard[],
  secrets: readonly string[],
): Promise<string> {
  const target = resolve(dir);
  const existing = await readdir(target).catch(() => null);
  if (existing !== null && existing.length > 0) {
    throw new FabricError(
      'usage',
      `--report ${dir}: the folder exists and is not empty. Name a new folder (or empty this one) so the report holds only this probe.`,
    );
  }
  const staging = `${target}.partial-${Date.now().toString(36)}`;
  await mkdir(staging, { recursive: true });
  try {
    const files: Record<string, string> = {
      'README.txt': README(cards),
    };
    for (const card of cards) {
      const name = cardFileName(card).replace(/\.json$/, '');
      const { probes, ...rest } = card;
      files[`${name}.json`] = JSON.stringify(
        { ...rest, probes: probes.map(({ exchanges: _, ...probe }) => probe) },
        null,
        2,
      );
      files[`${name}.exchanges.json`] = JSON.stringify(
        probes.map((probe) => ({ probe: probe.id, outcome: probe.outcome, exchanges: probe.exchanges })),
        null,
        2,
      );
    }
    for (const [file, text] of Object.entries(files))
      await writeFile(join(staging, file), `${scrubKeys(text, secrets)}\n`, 'utf8');
    await mkdir(dirname(target), { recursive: true });
    if (existing !== null) await rm(target, { recursive: true });
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return target;
}

function README(cards: readonly ModelCard[]): string {
  return [
    'A fabric model probe report (fabric models probe --report).',
    'Each model has <key>.json (its card: what each probe found) and <key>.exchanges.json',
    '(every request the probe sent and what the server answered). Keys are scrubbed.',
    `Models: ${cards.map((card) => `${card.model} on ${card.backend} ${card.baseUrl}`).join('; ')}`,
  ].join('\n');
}
