/**
 * Approvals and grants as files under the runs directory (SPEC §19, ADR 0017):
 * `<runsDir>/.approvals/<id>.json` the request, `<id>.answer.json` its answer, and
 * `grants/<id>.json` with `<id>.revoked.json`. A request is written whole (a temporary file
 * renamed into place); an answer and a revocation are created exclusively (`wx`), so of two
 * processes answering at once exactly one wins and the other gets `approval_answered`. Any
 * process with the runs directory reads and answers them: `fabric serve`, a worker, the CLI.
 */
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type {
  ApprovalFilter,
  ApprovalStore,
  GrantFilter,
  UnreadableFile,
} from '../../application/approvals/approval-store.ts';
import {
  type ApprovalAnswer,
  type ApprovalRecord,
  type Grant,
  grantHolds,
  stateAt,
} from '../../domain/approvals.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { ANSWER_SHAPE, type Damaged, GRANT_SHAPE, REQUEST_SHAPE, readWhole } from './approval-files.ts';

export const APPROVALS_DIR = '.approvals';

/** An approval id as the fabric makes them: never a path. */
const WHOLE_ID = /^apr_[a-z0-9]{12}$/;

/** Answered approvals kept in memory at most: past it, the cache starts again. */
const SETTLED_CACHE = 5000;

export class FileApprovalStore implements ApprovalStore {
  readonly #dir: string;
  readonly #now: () => Date;
  /**
   * Approvals with their answer: never written again (the answer is created once), so read once.
   * A server and the daemon list the approvals every second: only the pending ones are read again.
   */
  readonly #settled = new Map<string, ApprovalRecord>();

  constructor(runsDir: string, now: () => Date = () => new Date()) {
    this.#dir = join(resolve(runsDir), APPROVALS_DIR);
    this.#now = now;
  }

  get location(): string {
    return this.#dir;
  }

  async create(record: ApprovalRecord): Promise<void> {
    await this.#ensure(join(this.#dir, 'grants'));
    await writeWhole(join(this.#dir, `${record.id}.json`), record);
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    refuseEmpty(id, 'approval');
    // A whole id is read directly (a waiting run asks every poll); a prefix needs the listing.
    if (WHOLE_ID.test(id)) {
      const record = await this.#read(id);
      if (record !== undefined) return record;
    }
    const full = await this.#resolveId(id, await this.#requestIds(), 'approval');
    return full === undefined ? undefined : this.#read(full);
  }

  async forCall(runId: string, callId: string): Promise<ApprovalRecord | undefined> {
    return (await this.list({ runId })).find((record) => record.call_id === callId);
  }

  async list(filter: ApprovalFilter = {}): Promise<ApprovalRecord[]> {
    const records: ApprovalRecord[] = [];
    for (const id of await this.#requestIds()) {
      // A damaged file is left out here (`unreadable` names it), never fails the listing.
      const record = await this.#read(id).catch((error: unknown) => {
        if (error instanceof FabricError && error.code === 'approval_unreadable') return undefined;
        throw error;
      });
      if (record === undefined) continue;
      if (filter.runId !== undefined && record.run_id !== filter.runId) continue;
      if (filter.state !== undefined && record.state !== filter.state) continue;
      records.push(record);
    }
    return records.sort((a, b) => b.requested_at.localeCompare(a.requested_at) || b.id.localeCompare(a.id));
  }

  async answer(id: string, answer: ApprovalAnswer): Promise<ApprovalRecord> {
    refuseEmpty(id, 'approval');
    const full = await this.#resolveId(id, await this.#requestIds(), 'approval');
    const record = full === undefined ? undefined : await this.#read(full);
    if (record === undefined) throw notFound('approval', id, this.#dir);
    if (record.state !== 'pending' && !(record.state === 'expired' && answer.state === 'expired'))
      throw answered(record);
    if (record.state === 'expired' && answer.state !== 'expired') {
      // Past its expiry: the expiry is written (once) and the late answer refused.
      await this.#writeAnswer(record, expiryOf(record)).catch(() => {});
      throw answered({ ...record, state: 'expired', answer: expiryOf(record) });
    }
    try {
      await this.#writeAnswer(record, answer);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw unwritable(this.#dir, error);
      // An answer file that is not a whole answer (a writer cut by a full disk) is moved aside
      // once, so the approval can be answered again; exactly one of two answerers moves it.
      if (!(await this.#setAsideDamagedAnswer(record.id)))
        throw answered((await this.#read(record.id)) ?? record);
      try {
        await this.#writeAnswer(record, answer);
      } catch (again) {
        if ((again as NodeJS.ErrnoException).code !== 'EEXIST') throw unwritable(this.#dir, again);
        throw answered((await this.#read(record.id)) ?? record);
      }
    }
    if (answer.state === 'approved' && answer.scope !== 'once') await this.#grant(record, answer);
    return { ...record, state: answer.state, answer };
  }

  async unreadable(): Promise<UnreadableFile[]> {
    const found: UnreadableFile[] = [];
    for (const id of await this.#requestIds()) {
      // Read whole with its answer once already: neither file is written again.
      if (this.#settled.has(id)) continue;
      const request = await readWhole(join(this.#dir, `${id}.json`), REQUEST_SHAPE, id);
      if (request.kind === 'damaged') found.push(unreadableRequest(request));
      const answer = await readWhole(join(this.#dir, `${id}.answer.json`), ANSWER_SHAPE);
      if (answer.kind === 'damaged')
        found.push({
          file: answer.path,
          problem: answer.why,
          fix: `approval ${id} shows as pending: answer it again (the damaged answer is moved aside), or delete the file`,
        });
    }
    for (const id of await this.#grantIds()) {
      const grant = await readWhole(join(this.#dir, 'grants', `${id}.json`), GRANT_SHAPE, id);
      if (grant.kind === 'damaged')
        found.push({
          file: grant.path,
          problem: grant.why,
          fix: 'the grant is not in force; delete the file',
        });
    }
    return found;
  }

  async grants(filter: GrantFilter = {}): Promise<Grant[]> {
    const now = this.#now();
    const grants: Grant[] = [];
    for (const id of await this.#grantIds()) {
      const grant = await this.#readGrant(id);
      if (grant === undefined) continue;
      if (filter.specialist !== undefined && grant.specialist !== filter.specialist) continue;
      if (filter.all !== true && !grantHolds(grant, grant.run_id ?? '', grant.specialist, now)) continue;
      grants.push(grant);
    }
    return grants.sort((a, b) => b.created_at.localeCompare(a.created_at));
  }

  async revoke(id: string, at: string): Promise<Grant> {
    refuseEmpty(id, 'grant');
    const full = await this.#resolveId(id, await this.#grantIds(), 'grant');
    const grant = full === undefined ? undefined : await this.#readGrant(full);
    if (grant === undefined) throw notFound('grant', id, this.#dir);
    if (grant.revoked_at !== undefined) return grant;
    try {
      await writeFile(join(this.#dir, 'grants', `${grant.id}.revoked.json`), `${JSON.stringify({ at })}\n`, {
        flag: 'wx',
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw unwritable(this.#dir, error);
    }
    return (await this.#readGrant(grant.id)) ?? { ...grant, revoked_at: at };
  }

  async #grant(record: ApprovalRecord, answer: ApprovalAnswer): Promise<void> {
    const pattern = record.proposals[answer.pattern] ?? record.proposals[0];
    if (pattern === undefined) return;
    const grant: Grant = {
      id: `grt_${record.id.replace(/^apr_/, '')}`,
      scope: answer.scope === 'run' ? 'run' : 'specialist',
      specialist: record.specialist,
      ...(answer.scope === 'run' ? { run_id: record.run_id } : {}),
      pattern,
      approval_id: record.id,
      created_at: answer.at,
      ...(answer.grant_expires_at === undefined ? {} : { expires_at: answer.grant_expires_at }),
    };
    await this.#ensure(join(this.#dir, 'grants'));
    await writeWhole(join(this.#dir, 'grants', `${grant.id}.json`), grant);
  }

  async #writeAnswer(record: ApprovalRecord, answer: ApprovalAnswer): Promise<void> {
    await writeFile(join(this.#dir, `${record.id}.answer.json`), `${JSON.stringify(answer)}\n`, {
      flag: 'wx',
    });
  }

  async #read(id: string): Promise<ApprovalRecord | undefined> {
    const settled = this.#settled.get(id);
    if (settled !== undefined) return settled;
    const request = await readWhole(join(this.#dir, `${id}.json`), REQUEST_SHAPE, id);
    if (request.kind === 'missing') return undefined;
    if (request.kind === 'damaged') {
      const { file, problem, fix } = unreadableRequest(request);
      throw new FabricError('approval_unreadable', `${file} is not a whole approval (${problem}): ${fix}.`, {
        details: { approval: id, file },
      });
    }
    const record = request.value as ApprovalRecord;
    // A damaged answer is no answer: the approval is pending (and can be answered again).
    const read = await readWhole(join(this.#dir, `${id}.answer.json`), ANSWER_SHAPE);
    if (read.kind === 'ok') {
      const answer = read.value as ApprovalAnswer;
      if (this.#settled.size >= SETTLED_CACHE) this.#settled.clear();
      const answered: ApprovalRecord = { ...record, state: answer.state, answer };
      this.#settled.set(id, answered);
      return answered;
    }
    const state = stateAt(record, this.#now());
    return state === 'expired' ? { ...record, state, answer: expiryOf(record) } : record;
  }

  /**
   * Moves a damaged answer file aside; false when the answer there is whole, may still be being
   * written, or another process is moving this same damaged file (a repair is claimed with an
   * exclusive file named by the damaged one's time, so exactly one answerer goes on).
   */
  async #setAsideDamagedAnswer(id: string): Promise<boolean> {
    const path = join(this.#dir, `${id}.answer.json`);
    const read = await readWhole(path, ANSWER_SHAPE);
    if (read.kind !== 'damaged') return read.kind === 'missing';
    const info = await stat(path).catch(() => null);
    // An answer file is created, then written: one younger than this may still be being written.
    if (info === null || Date.now() - info.mtimeMs < ANSWER_WRITE_MS) return false;
    const aside = `${path}.damaged-${Math.trunc(info.mtimeMs)}`;
    try {
      await writeFile(`${aside}.claim`, '', { flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw unwritable(this.#dir, error);
    }
    try {
      await rename(path, aside);
    } catch (error) {
      throw unwritable(this.#dir, error);
    }
    return true;
  }

  async #readGrant(id: string): Promise<Grant | undefined> {
    const read = await readWhole(join(this.#dir, 'grants', `${id}.json`), GRANT_SHAPE, id);
    if (read.kind !== 'ok') return undefined;
    const grant = read.value as Grant;
    const revoked = await readJson<{ at: string }>(join(this.#dir, 'grants', `${id}.revoked.json`));
    return revoked === undefined ? grant : { ...grant, revoked_at: revoked.at };
  }

  async #requestIds(): Promise<string[]> {
    return (await listDir(this.#dir))
      .filter((name) => name.startsWith('apr_') && name.endsWith('.json') && !name.endsWith('.answer.json'))
      .map((name) => name.slice(0, -'.json'.length));
  }

  async #grantIds(): Promise<string[]> {
    return (await listDir(join(this.#dir, 'grants')))
      .filter((name) => name.startsWith('grt_') && name.endsWith('.json') && !name.endsWith('.revoked.json'))
      .map((name) => name.slice(0, -'.json'.length));
  }

  async #resolveId(
    id: string,
    ids: readonly string[],
    what: 'approval' | 'grant',
  ): Promise<string | undefined> {
    if (ids.includes(id)) return id;
    const matches = ids.filter((candidate) => candidate.startsWith(id));
    if (matches.length > 1)
      throw new FabricError(
        'usage',
        `"${id}" is the start of ${matches.length} ${what} ids (${matches.slice(0, 3).join(', ')}${matches.length > 3 ? ', …' : ''}): give more of it.`,
      );
    return matches[0];
  }

  async #ensure(dir: string): Promise<void> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      throw unwritable(dir, error);
    }
  }
}

/** The answer an approval past its `expires_at` has: expired, by nobody. */
export function expiryOf(record: ApprovalRecord): ApprovalAnswer {
  return {
    state: 'expired',
    scope: 'once',
    pattern: 0,
    channel: 'timeout',
    at: record.expires_at ?? new Date().toISOString(),
  };
}

/** How long an answer file may take from its creation to its last byte, at most. */
const ANSWER_WRITE_MS = 2000;

function refuseEmpty(id: string, what: 'approval' | 'grant'): void {
  if (id.trim() === '')
    throw new FabricError(
      'usage',
      `An ${what} id cannot be empty. List them with: fabric approvals list${what === 'grant' ? ' --grants' : ''}`,
    );
}

function unreadableRequest(damaged: Damaged): UnreadableFile {
  return {
    file: damaged.path,
    problem: damaged.why,
    fix: 'it is left out; its run asks again when it goes on (fabric resume RUN, or the process that parked it). Move the file away to stop this message',
  };
}

function answered(record: ApprovalRecord): FabricError {
  const answer = record.answer;
  const how =
    answer === undefined
      ? record.state
      : `${answer.state}${answer.state === 'expired' ? ` at ${answer.at}` : ` through ${answer.channel} at ${answer.at}`}`;
  return new FabricError(
    'approval_answered',
    `Approval ${record.id} already has its answer (${how}); a second answer changes nothing. ` +
      `See it with: fabric approvals list --run ${record.run_id}`,
    { details: { approval: record.id, state: record.state } },
  );
}

function notFound(what: 'approval' | 'grant', id: string, dir: string): FabricError {
  return new FabricError(
    'approval_not_found',
    `No ${what} "${id}" in ${dir}. List them with: fabric approvals list${what === 'grant' ? ' --grants' : ''}`,
    { details: { [what]: id } },
  );
}

function unwritable(dir: string, error: unknown): FabricError {
  return new FabricError(
    'runlog_unwritable',
    `Cannot write approvals under ${dir}: ${errorMessage(error)}. The runs directory must be writable by this user.`,
    { cause: error },
  );
}

async function writeWhole(path: string, value: unknown): Promise<void> {
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(value)}\n`);
    await rename(temporary, path);
  } catch (error) {
    throw unwritable(path, error);
  }
}

async function readJson<T>(path: string): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    // A file cut by a full disk: treated as not there (an answer is then asked again).
    return undefined;
  }
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}
