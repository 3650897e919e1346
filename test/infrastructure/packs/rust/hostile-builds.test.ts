import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecialistPack } from '../../../../src/application/ports.ts';
import {
  call,
  expectRefusal,
  expectToolError,
  processesMatching,
  rustPack,
  tempDir,
  waitForNoProcess,
} from './helpers.ts';

/**
 * One fixture crate whose build script does what `mode.txt` says. Changing the file re-runs
 * only the build script, so every hostile case shares one compiled build script.
 */
const BUILD_RS = String.raw`
use std::{fs, net::TcpStream, process::{Command, Stdio}, time::Duration};

fn main() {
    println!("cargo:rerun-if-changed=mode.txt");
    let mode = fs::read_to_string("mode.txt").unwrap_or_default();
    let mode = mode.trim();
    let (action, arg) = mode.split_once(' ').unwrap_or((mode, ""));
    match action {
        "write" => {
            let result = fs::write(arg, "pwned");
            println!("cargo:warning=HOSTILE write ok={}", result.is_ok());
        }
        "read" => {
            let text = fs::read_to_string(arg).unwrap_or_else(|e| format!("failed: {e}"));
            println!("cargo:warning=HOSTILE read {}", text.replace('\n', " "));
        }
        "env" => {
            for (key, value) in std::env::vars() {
                println!("cargo:warning=HOSTILE env {key}={value}");
            }
        }
        "connect" => {
            let addr = arg.parse().expect("socket address");
            let result = TcpStream::connect_timeout(&addr, Duration::from_secs(2));
            println!("cargo:warning=HOSTILE connect ok={}", result.is_ok());
        }
        "sleep" => {
            let _ = Command::new("setsid").args(["sleep", arg]).spawn();
            let _ = Command::new("sleep").arg(arg).spawn();
            loop {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        "fork" => {
            // Detached from cargo's pipes, so cargo finishes while they live on.
            for _ in 0..8 {
                let _ = Command::new("sleep").arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
            }
            let _ = Command::new("setsid").args(["sleep", arg]).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
            println!("cargo:warning=HOSTILE forked");
        }
        "plant" => {
            let _ = fs::create_dir_all(".cargo");
            let _ = fs::write(".cargo/config.toml", "[build]\nrustc-wrapper = \"/tmp/evil\"\n");
            let _ = fs::write("rust-toolchain.toml", "[toolchain]\npath = \"/tmp/evil\"\n");
            let _ = fs::create_dir_all(".git/hooks");
            let _ = fs::write(".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n");
        }
        "symlink" => {
            let _ = std::os::unix::fs::symlink(arg, "escape");
        }
        _ => {}
    }
}
`;

const LIB_RS = `
pub fn answer() -> u32 {
    42
}

#[cfg(test)]
mod tests {
    #[test]
    fn floods_when_asked() {
        let mode = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/mode.txt")).unwrap_or_default();
        if mode.trim() == "flood" {
            let line = "x".repeat(1000);
            loop {
                println!("{line}");
            }
        }
    }
}
`;

const SECRET = `build-secret-${Math.random().toString(36).slice(2)}`;
let base: string;
let ws: string;
let outside: string;
let cleanup: () => Promise<void>;
let pack: SpecialistPack;

async function setMode(mode: string): Promise<void> {
  await call(pack, 'write_file', { path: 'mode.txt', content: `${mode}\n` });
}

async function check(): Promise<string> {
  return call(pack, 'shell', { command: 'cargo check' }).catch((error: Error) => error.message);
}

beforeAll(async () => {
  process.env.FABRIC_TEST_SECRET = SECRET;
  const temp = await tempDir('fabric-hostile-');
  cleanup = temp.cleanup;
  base = temp.dir;
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(path.join(ws, 'src'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), SECRET);
  await writeFile(
    path.join(ws, 'Cargo.toml'),
    '[package]\nname = "hostile"\nversion = "0.1.0"\nedition = "2021"\nbuild = "build.rs"\n\n[dependencies]\n',
  );
  await writeFile(path.join(ws, 'build.rs'), BUILD_RS);
  await writeFile(path.join(ws, 'src', 'lib.rs'), LIB_RS);
  await writeFile(path.join(ws, 'mode.txt'), 'none\n');
  pack = await rustPack(ws);
  // Compile the build script once; every case below only re-runs it.
  expect(await call(pack, 'cargo_check', {})).toMatch(/cargo check passed/);
}, 120_000);

afterAll(async () => {
  delete process.env.FABRIC_TEST_SECRET;
  await pack.close();
  await cleanup();
});

describe('hostile build scripts under cargo check', () => {
  it('cannot write a file outside the workspace', async () => {
    const target = path.join(outside, 'pwned.txt');
    await setMode(`write ${target}`);
    expect(await check()).toContain('HOSTILE write ok=false');
    expect(existsSync(target)).toBe(false);
  });

  it('cannot write into a sibling folder whose name starts with the workspace name', async () => {
    await mkdir(`${ws}-evil`, { recursive: true });
    await setMode(`write ${ws}-evil/pwned.txt`);
    expect(await check()).toContain('HOSTILE write ok=false');
    expect(existsSync(`${ws}-evil/pwned.txt`)).toBe(false);
  });

  it('cannot write into the toolchain', async () => {
    await setMode('write /usr/local/pwned-by-build-script');
    expect(await check()).toContain('HOSTILE write ok=false');
    expect(existsSync('/usr/local/pwned-by-build-script')).toBe(false);
  });

  it('cannot read a secret file outside the workspace', async () => {
    await setMode(`read ${path.join(outside, 'secret.txt')}`);
    const output = await check();
    expect(output).toContain('HOSTILE read failed');
    expect(output).not.toContain(SECRET);
  });

  it('cannot read the system password hashes', async () => {
    await setMode('read /etc/shadow');
    expect(await check()).toContain('HOSTILE read failed');
  });

  it('sees no variable of the fabric environment when it prints its own', async () => {
    await setMode('env');
    const output = await check();
    expect(output).toContain('HOSTILE env PATH=');
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain('FABRIC_TEST_SECRET');
    expect(output).toContain('HOSTILE env HOME=/tmp/.fabric-home');
  });

  describe('reaching the network', () => {
    let server: Server;
    let port = 0;
    let connections = 0;

    beforeAll(async () => {
      server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });

    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it('cannot connect to a server on the host when the specialist has no network', async () => {
      await setMode(`connect 127.0.0.1:${port}`);
      expect(await check()).toContain('HOSTILE connect ok=false');
      expect(connections).toBe(0);
    });

    it('can connect when the specialist allows the network', async () => {
      const networked = await rustPack(ws, { network: true });
      // A different file content, so the build script runs again with the same mode.
      await call(networked, 'write_file', { path: 'mode.txt', content: `connect 127.0.0.1:${port}\n\n` });
      const output = await call(networked, 'shell', { command: 'cargo check' });
      expect(output).toContain('HOSTILE connect ok=true');
      expect(connections).toBe(1);
    });
  });

  it('leaves no process behind after forking children and a setsid escapee', async () => {
    await setMode('fork 5151.5');
    expect(await check()).toContain('HOSTILE forked');
    expect(await waitForNoProcess('sleep 5151.5')).toEqual([]);
  });

  it('is killed with all it started when it sleeps forever past the timeout', async () => {
    const short = await rustPack(ws, { timeout_s: 4 });
    await setMode('sleep 5252.5');
    const message = await expectToolError(call(short, 'shell', { command: 'cargo check' }));
    expect(message).toMatch(/timed out after/);
    expect(await waitForNoProcess('sleep 5252.5')).toEqual([]);
  });

  it('is stopped with all it started when the run is cancelled', async () => {
    await setMode('sleep 5353.5');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 2500);
    const message = await expectToolError(call(pack, 'cargo_check', {}, controller.signal));
    expect(message).toMatch(/cancelled/);
    expect(await waitForNoProcess('sleep 5353.5')).toEqual([]);
  });

  it('cannot plant cargo config, a toolchain file or a git hook for later', async () => {
    await mkdir(path.join(ws, '.git'), { recursive: true });
    await setMode('plant');
    await expectRefusal(call(pack, 'shell', { command: 'cargo check' }), 'protected_file_modified');
    expect(existsSync(path.join(ws, '.cargo'))).toBe(false);
    expect(existsSync(path.join(ws, 'rust-toolchain.toml'))).toBe(false);
    expect(existsSync(path.join(ws, '.git', 'hooks'))).toBe(false);
  });

  it('cannot use a symlink it creates to make the file tools write outside', async () => {
    await setMode(`symlink ${outside}`);
    await check();
    await expectRefusal(
      call(pack, 'write_file', { path: 'escape/pwned.txt', content: 'x' }),
      'symlink_escape',
    );
    expect(existsSync(path.join(outside, 'pwned.txt'))).toBe(false);
  });

  it('has a test that prints without end cut to the head and the tail', async () => {
    await setMode('flood');
    const flood = await rustPack(ws, { output_limit_bytes: 4096 });
    const message = await expectToolError(call(flood, 'shell', { command: 'cargo test -- --nocapture' }));
    expect(message).toMatch(/killed after printing \d+ bytes/);
    expect(message.length).toBeLessThan(10_000);
    await setMode('none');
  });
});

afterAll(async () => {
  expect(processesMatching('sleep 5[1-3]5[1-3]')).toEqual([]);
  expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
});
