/**
 * Model cards as files under the runs directory (SPEC §20): `<runs_dir>/models/<key>.json`, one
 * per model and server, written whole to a temporary file and renamed, so a reader never sees half
 * a card.
 */
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ModelCard,
  type ModelCardStore,
  cardKey,
  isModelCardRows,
} from '../../application/models/model-card.ts';
import { SharedModelCards } from '../../application/models/shared-cards.ts';
import { heldByAnotherProcess } from '../control/dir-lock.ts';

/** A card's key as a file name: server URLs and model ids hold `/` and `:`. */
export function cardFileName(card: Pick<ModelCard, 'model' | 'backend' | 'baseUrl'>): string {
  return `${cardKey(card)
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .slice(0, 200)}.json`;
}

export class FileModelCards implements ModelCardStore {
  readonly #dir: string;

  constructor(runsDir: string) {
    this.#dir = join(runsDir, 'models');
  }

  async save(card: ModelCard): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
    const path = join(this.#dir, cardFileName(card));
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(card, null, 2)}\n`, 'utf8');
    await rename(temporary, path);
  }

  async list(): Promise<ModelCard[]> {
    let entries: string[];
    try {
      entries = await readdir(this.#dir);
    } catch {
      return [];
    }
    const cards: ModelCard[] = [];
    for (const entry of entries.filter((name) => name.endsWith('.json')).sort()) {
      try {
        const card = JSON.parse(await readFile(join(this.#dir, entry), 'utf8')) as ModelCard;
        if (typeof card.model === 'string' && Array.isArray(card.probes)) cards.push(card);
      } catch {
        // a card that does not read is skipped; the next probe writes it again
      }
    }
    return cards;
  }
}

/**
 * The cards of a runs directory, shared through the control plane when `control` opens one that
 * keeps cards (SPEC §20): the store every reader and writer of cards uses.
 */
export function modelCardsIn(
  runsDir: string,
  control: () => Promise<unknown>,
  onDegraded?: (message: string) => void,
): ModelCardStore {
  return new SharedModelCards(new FileModelCards(runsDir), {
    shared: async () => {
      const store = await control();
      return isModelCardRows(store) ? store : null;
    },
    // The embedded database held by another live process serves it (SPEC §7): the files here
    // answer, and it is no fault to report, as the control plane treats it.
    quietRead: heldByAnotherProcess,
    ...(onDegraded === undefined ? {} : { onDegraded }),
  });
}
