import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import type { ScriptedTurn } from './fake-llm-server.ts';
import { tempDir } from './temp-dirs.ts';

/** A tiny dependency-free crate (crates.io is out of reach) with a passing test. */
export const BASE_LIB = `pub fn area(w: u32, h: u32) -> u32 {
    w * h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_multiplies() {
        assert_eq!(area(2, 3), 6);
    }
}
`;

/** Runs git in a directory and returns its stdout. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await execa('git', args, { cwd })).stdout;
}

/** A git repository holding the crate and the given files, all committed on `main`. */
export async function daemonRepo(files: Record<string, string>): Promise<string> {
  const dir = await tempDir('daemon-repo-');
  const all: Record<string, string> = {
    'Cargo.toml': '[package]\nname = "fixture"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    'src/lib.rs': BASE_LIB,
    '.gitignore': 'target/\n',
    ...files,
  };
  for (const [path, content] of Object.entries(all)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  await git(dir, 'init', '-q', '-b', 'main');
  await git(dir, 'config', 'user.name', 'Daemon Test');
  await git(dir, 'config', 'user.email', 'daemon@example.com');
  // Cargo.lock is written by the first build: committed up front so the tree stays clean.
  await execa('cargo', ['generate-lockfile', '--offline'], { cwd: dir });
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'the crate and its OpenSpec changes');
  return dir;
}

/** The text the daemon's run of a task starts with: what the fake server matches on. */
export function taskKey(change: string, id: string): string {
  return `task ${id} of OpenSpec change "${change}"`;
}

/** One model turn calling tools. */
export function calls(...toolCalls: { name: string; arguments: Record<string, unknown> }[]): ScriptedTurn {
  return { reply: { toolCalls, usage: { prompt: 100, completion: 20 } } };
}

/** One model turn adding a module to the crate: its `pub mod` line in lib.rs and its file. */
export function addModule(name: string, content: string): ScriptedTurn {
  return calls(
    {
      name: 'edit_file',
      arguments: { path: 'src/lib.rs', old_text: 'pub fn area', new_text: `pub mod ${name};\n\npub fn area` },
    },
    { name: 'write_file', arguments: { path: `src/${name}.rs`, content } },
  );
}

/** The turn that finishes a run. */
export function finish(summary: string): ScriptedTurn {
  return calls({ name: 'finish_task', arguments: { summary } });
}

/** A module with one function and a unit test; `right` decides whether the test passes. */
export function rustModule(name: string, body: string, test: string): string {
  return `pub fn ${name}(x: u32) -> u32 {\n    ${body}\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn ${name}_works() {\n        ${test}\n    }\n}\n`;
}

/** The config of the daemon's tests: the rust specialist, allowed to build and test (the validation). */
export const DAEMON_CONFIG = {
  specialists: {
    rust: {
      builder: 'builtin:rust',
      max_steps: 8,
      sandbox: { allowed_commands: ['cargo build', 'cargo test'], timeout_s: 120 },
    },
  },
};

/** A chat request's first user message: the task, with the daemon's key for it. */
export function firstUserMessage(request: { body: unknown }): string {
  const messages = (request.body as { messages: { role: string; content: string }[] }).messages;
  return messages.find((m) => m.role === 'user')?.content ?? '';
}
