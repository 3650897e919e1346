import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  cargoTestFailures,
  cargoTestFailuresLine,
  formatCargoTestFailures,
} from '../../../src/infrastructure/cargo-checks/cargo-test-failures.ts';
import { tempDir } from '../../support/temp-dirs.ts';

// Every way a test fails that a person must be able to read from the summary.
const LIB = `pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(5, 7), 13);
    }

    #[test]
    fn passes() {
        assert_eq!(add(1, 1), 2);
    }

    #[test]
    fn explains() {
        println!("noise the test printed");
        panic!("region {} is empty\\nand has no owner", 3);
    }

    #[test]
    #[should_panic]
    fn should_have_panicked() {}
}
`;

/** Real \`cargo test\` output (stdout and stderr, as the sandbox joins them) of a crate with failing tests. */
async function cargoTest(env: Record<string, string | undefined>): Promise<string> {
  const dir = await tempDir('cargo-failures-');
  await mkdir(join(dir, 'src'));
  await writeFile(join(dir, 'Cargo.toml'), '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n');
  await writeFile(join(dir, 'src/lib.rs'), LIB);
  const result = await execa('cargo', ['test', '--offline'], {
    cwd: dir,
    reject: false,
    env,
    extendEnv: true,
  });
  expect(result.exitCode).toBe(101);
  return `${result.stdout}\n${result.stderr}`;
}

describe('cargoTestFailures on real cargo test output', () => {
  let plain: string;
  let withBacktrace: string;
  beforeAll(async () => {
    [plain, withBacktrace] = await Promise.all([
      cargoTest({ RUST_BACKTRACE: '0' }),
      cargoTest({ RUST_BACKTRACE: '1' }),
    ]);
  }, 120_000);

  it('names each failing test with where it panicked and the assertion with left and right', () => {
    const failures = cargoTestFailures(plain);
    expect(failures?.failed).toEqual([
      {
        name: 'tests::adds',
        location: 'src/lib.rs:11:9',
        message: ['assertion `left == right` failed', '  left: 12', ' right: 13'],
      },
      {
        name: 'tests::explains',
        location: 'src/lib.rs:22:9',
        message: ['region 3 is empty', 'and has no owner'],
      },
      {
        name: 'tests::should_have_panicked',
        location: 'src/lib.rs:27:8',
        message: ['test did not panic as expected'],
      },
    ]);
    expect(failures?.results).toEqual([expect.stringMatching(/^test result: FAILED\. 1 passed; 3 failed;/)]);
  });

  it('keeps a backtrace out of the message', () => {
    expect(cargoTestFailures(withBacktrace)?.failed[0]?.message).toEqual([
      'assertion `left == right` failed',
      '  left: 12',
      ' right: 13',
    ]);
  });

  it('formats the failures for a person, message under its test, the result line last', () => {
    const text = formatCargoTestFailures(cargoTestFailures(plain) ?? { failed: [], results: [] });
    expect(text).toContain(
      'tests::adds panicked at src/lib.rs:11:9:\n  assertion `left == right` failed\n    left: 12\n   right: 13\n',
    );
    expect(text).not.toContain('noise the test printed');
    expect(text.split('\n').at(-1)).toMatch(/^test result: FAILED\. 1 passed; 3 failed;/);
  });

  it('says it on one line for a battery cell: the first failure with its message, and the counts', () => {
    expect(cargoTestFailuresLine(cargoTestFailures(plain) ?? { failed: [], results: [] })).toBe(
      'tests::adds panicked at src/lib.rs:11:9: assertion `left == right` failed, left: 12, right: 13 and 2 more failed; 1 passed; 3 failed',
    );
  });

  it('finds nothing in the output of a passing run or a build error', () => {
    expect(
      cargoTestFailures('running 1 test\ntest tests::ok ... ok\n\ntest result: ok. 1 passed; 0 failed'),
    ).toBeNull();
    expect(
      cargoTestFailures('error[E0425]: cannot find value `x` in this scope\nerror: could not compile'),
    ).toBeNull();
  });
});
