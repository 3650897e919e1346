/**
 * The daemon's status for a repository (SPEC §11: `fabric daemon status`, `GET /v1/daemon`, the
 * viewer's daemon page), from its checklists and the state file the daemon keeps: readable with
 * the control plane off and with no daemon running. Reaches them through the ports below.
 */
import type { DaemonStateStore } from './daemon-ports.ts';
import { buildStatus, type DaemonStatus } from './daemon-status.ts';
import type { OpenSpecSource } from './openspec.ts';

/** Where a status is read from. */
export interface DaemonStatusSources {
  /** The repositories a daemon has worked on (one state each), sorted. */
  repos(): Promise<string[]>;
  /** The daemon's state of a repository (only `load` is used). */
  state(repo: string): Pick<DaemonStateStore, 'load'>;
  /** The repository's OpenSpec change sets (only `scan` is used). */
  openspec(repo: string): Pick<OpenSpecSource, 'scan'>;
  /** Whether the daemon that last wrote a state still runs: on this host, its process alive. */
  isRunning(owner: { readonly pid: number; readonly host: string }): boolean;
}

/** Reads daemon status, for one repository or every one a daemon has worked on. */
export class DaemonStatusReader {
  readonly #sources: DaemonStatusSources;

  constructor(sources: DaemonStatusSources) {
    this.#sources = sources;
  }

  /** The status of one repository. */
  async read(repo: string): Promise<DaemonStatus> {
    const state = await this.#sources.state(repo).load();
    const scan = await this.#sources.openspec(repo).scan();
    const running =
      state?.pid != null &&
      state.host !== null &&
      this.#sources.isRunning({ pid: state.pid, host: state.host });
    return buildStatus(repo, scan, state, running);
  }

  /** The repositories a daemon has worked on, from the states it keeps. */
  repos(): Promise<string[]> {
    return this.#sources.repos();
  }
}
