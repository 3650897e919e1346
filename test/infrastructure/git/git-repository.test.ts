import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { GitRepository } from '../../../src/infrastructure/git/git-repository.ts';
import { tempDir } from '../../support/temp-dirs.ts';

async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await execa('git', args, { cwd })).stdout;
}

async function newRepo(): Promise<string> {
  const dir = await tempDir('git-repo-');
  await git(dir, 'init', '-q', '-b', 'main');
  await git(dir, 'config', 'user.name', 'Test');
  await git(dir, 'config', 'user.email', 'test@example.com');
  await writeFile(join(dir, 'a.txt'), 'one\n');
  await writeFile(join(dir, '.gitignore'), 'target/\n');
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'first');
  return dir;
}

describe('GitRepository', () => {
  it('says a directory that is not a repository needs git init', async () => {
    const dir = await tempDir('not-git-');
    await expect(new GitRepository(dir).ensureReady()).rejects.toThrow(/is not a git work tree.*git init/);
  });

  it('refuses a detached HEAD, naming how to get back on a branch', async () => {
    const dir = await newRepo();
    await git(dir, 'checkout', '-q', '--detach');
    await expect(new GitRepository(dir).ensureReady()).rejects.toThrow(/HEAD is detached.*git switch/);
  });

  it('refuses a merge in progress', async () => {
    const dir = await newRepo();
    await git(dir, 'switch', '-q', '-c', 'other');
    await writeFile(join(dir, 'a.txt'), 'other\n');
    await git(dir, 'commit', '-q', '-am', 'other');
    await git(dir, 'switch', '-q', 'main');
    await writeFile(join(dir, 'a.txt'), 'main\n');
    await git(dir, 'commit', '-q', '-am', 'main');
    await execa('git', ['merge', 'other'], { cwd: dir, reject: false });
    await expect(new GitRepository(dir).ensureReady()).rejects.toThrow(/a merge is in progress/);
  });

  it('refuses a dirty tree and leaves the edit alone', async () => {
    const dir = await newRepo();
    await writeFile(join(dir, 'a.txt'), 'my edit\n');
    await expect(new GitRepository(dir).ensureReady()).rejects.toThrow(/uncommitted changes.*\n\s+M a\.txt/);
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('my edit\n');
  });

  it('ignores the run record inside the tree: not dirty, not committed, not cleaned', async () => {
    const dir = await newRepo();
    await mkdir(join(dir, 'runs'));
    await writeFile(join(dir, 'runs', 'state.json'), '{}');
    const repo = new GitRepository(dir, [join(dir, 'runs')]);
    await repo.ensureReady();
    await writeFile(join(dir, 'b.txt'), 'new\n');
    await repo.restore();
    expect(await readFile(join(dir, 'runs', 'state.json'), 'utf8')).toBe('{}');
    await expect(readFile(join(dir, 'b.txt'))).rejects.toThrow();
  });

  it('restores changed and new files but keeps ignored build output', async () => {
    const dir = await newRepo();
    await mkdir(join(dir, 'target'));
    await writeFile(join(dir, 'target', 'cache'), 'x');
    await writeFile(join(dir, 'a.txt'), 'changed\n');
    await mkdir(join(dir, 'src'));
    await writeFile(join(dir, 'src', 'new.rs'), 'fn x() {}\n');
    await new GitRepository(dir).restore();
    expect(await git(dir, 'status', '--porcelain')).toBe('');
    expect(await readFile(join(dir, 'target', 'cache'), 'utf8')).toBe('x');
  });

  it('commits everything with the message and trailer, and measures the change', async () => {
    const dir = await newRepo();
    await writeFile(join(dir, 'a.txt'), 'one\ntwo\n');
    await writeFile(join(dir, 'c.txt'), 'c\n');
    const repo = new GitRepository(dir);
    const { commit, size } = await repo.commit('daemon: c 1.1 Do it\n\nFabric-Run: r1');
    expect(commit).toBe(await repo.head());
    expect(size).toEqual({ files: 2, added: 2, removed: 0 });
    expect((await git(dir, 'log', '-1', '--format=%(trailers:key=Fabric-Run,valueonly)')).trim()).toBe('r1');
  });

  it('says a failing commit hook failed, with what it printed', async () => {
    const dir = await newRepo();
    await writeFile(
      join(dir, '.git', 'hooks', 'pre-commit'),
      '#!/bin/sh\necho "lint says no" >&2\nexit 1\n',
      {
        mode: 0o755,
      },
    );
    await writeFile(join(dir, 'a.txt'), 'changed\n');
    await expect(new GitRepository(dir).commit('x')).rejects.toThrow(/git commit failed.*lint says no/s);
  });

  it('lets one daemon hold a repository at a time and takes over a lock whose process is gone', async () => {
    const dir = await newRepo();
    const repo = new GitRepository(dir);
    const release = await repo.lock();
    await expect(repo.lock()).rejects.toThrow(/Another daemon \(pid \d+/);
    await release();
    await writeFile(
      join(dir, '.git', 'fabric-daemon.lock'),
      JSON.stringify({ pid: 2 ** 22 + 7, host: (await import('node:os')).hostname() }),
    );
    const again = await repo.lock();
    await again();
  });

  it('names changed files relative to its own directory when that is a folder inside the work tree', async () => {
    const top = await newRepo();
    const repo = join(top, 'compositor');
    await mkdir(join(repo, 'openspec'), { recursive: true });
    await writeFile(join(repo, 'openspec', 'tasks.md'), '- [ ] 1.1 Do it\n');
    await git(top, 'add', '-A');
    await git(top, 'commit', '-q', '-m', 'sub');
    await writeFile(join(repo, 'openspec', 'tasks.md'), '- [x] 1.1 Do it\n');
    await writeFile(join(repo, 'new file.rs'), 'fn main() {}\n');
    await writeFile(join(top, 'a.txt'), 'changed outside\n');
    expect([...(await new GitRepository(repo).changedFiles())].sort()).toEqual([
      'new file.rs',
      'openspec/tasks.md',
    ]);
  });

  describe('changes set aside for a parked run (SPEC §19)', () => {
    it('keeps edits and new files under a ref of its own, outside branches and the stash, and brings them back onto a newer HEAD', async () => {
      const dir = await newRepo();
      await writeFile(join(dir, 'b.txt'), 'bee\n');
      await git(dir, 'add', 'b.txt');
      await git(dir, 'commit', '-q', '-m', 'b');
      const repo = new GitRepository(dir, [join(dir, 'runs')]);
      await mkdir(join(dir, 'runs'));
      await writeFile(join(dir, 'runs', 'run.jsonl'), '{}\n');
      await writeFile(join(dir, 'a.txt'), 'one, parked\n');
      await writeFile(join(dir, 'new.rs'), 'fn parked() {}\n');
      const ref = await repo.setAside('run-1', 'alpha 1.1: parked on approval ap-1');
      expect(ref).toBe('refs/fabric/parked/run-1');
      expect(await repo.holdsAside(ref)).toBe(true);
      // Left as it was by setAside; the daemon restores the tree itself.
      expect(await readFile(join(dir, 'new.rs'), 'utf8')).toBe('fn parked() {}\n');
      expect(await git(dir, 'show', '--name-only', '--format=%s', ref)).toBe(
        'alpha 1.1: parked on approval ap-1\n\na.txt\nnew.rs',
      );
      expect(await git(dir, 'stash', 'list')).toBe('');
      expect(await git(dir, 'branch', '--list')).toBe('* main');
      await repo.restore();
      expect(await repo.holdsAside(ref)).toBe(false);

      // Another change is committed meanwhile, touching another file.
      await writeFile(join(dir, 'b.txt'), 'bee, changed since\n');
      await repo.commit('beta');
      expect(await repo.bringBack(ref)).toEqual({ ok: true });
      expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('one, parked\n');
      expect(await readFile(join(dir, 'b.txt'), 'utf8')).toBe('bee, changed since\n');
      expect(await readFile(join(dir, 'new.rs'), 'utf8')).toBe('fn parked() {}\n');
      // As the run left them: changed and new, nothing staged, no cherry-pick in progress.
      expect(await git(dir, 'status', '--porcelain', '--', '.', ':(exclude)runs')).toBe(
        ' M a.txt\n?? new.rs',
      );
      await repo.ensureReady({ dirtyOk: true });
      await repo.dropAside(ref);
      expect(
        await execa('git', ['rev-parse', '-q', '--verify', ref], { cwd: dir, reject: false }),
      ).toMatchObject({
        exitCode: 1,
      });
    });

    it('says which files clash when the edits no longer apply, and leaves the tree clean with the ref kept', async () => {
      const dir = await newRepo();
      const repo = new GitRepository(dir);
      await writeFile(join(dir, 'a.txt'), 'parked edit\n');
      const ref = await repo.setAside('run-2', 'parked');
      await repo.restore();
      await writeFile(join(dir, 'a.txt'), 'committed since\n');
      await repo.commit('other');
      const back = await repo.bringBack(ref);
      expect(back).toEqual({
        ok: false,
        reason: expect.stringContaining('clash with what was committed since in a.txt'),
      });
      expect(await git(dir, 'status', '--porcelain')).toBe('');
      expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('committed since\n');
      await repo.ensureReady();
      expect(await git(dir, 'show', `${ref}:a.txt`)).toBe('parked edit');
    });

    it('touches no ref but its own: a hand-edited state naming a branch is refused, the branch kept', async () => {
      const dir = await newRepo();
      const repo = new GitRepository(dir);
      for (const ref of ['refs/heads/main', 'refs/fabric/parked/../../heads/main', 'HEAD'])
        await expect(repo.dropAside(ref)).rejects.toThrow('is not a ref the daemon set');
      await expect(repo.bringBack('refs/heads/main')).rejects.toThrow('is not a ref the daemon set');
      await expect(repo.setAside('../heads/main', 'x')).rejects.toThrow('is not a ref the daemon set');
      expect(await git(dir, 'branch', '--list')).toBe('* main');
    });

    it('brings back nothing when nothing was changed before the park', async () => {
      const dir = await newRepo();
      const repo = new GitRepository(dir);
      const ref = await repo.setAside('run-3', 'parked before any edit');
      expect(await repo.holdsAside(ref)).toBe(true);
      expect(await repo.bringBack(ref)).toEqual({ ok: true });
      expect(await git(dir, 'status', '--porcelain')).toBe('');
    });
  });
});
