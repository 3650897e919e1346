import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';

const START = {
  v: 1,
  kind: 'run_start',
  ts: '2026-01-01T00:00:00.000Z',
  run_id: '20260101T000000Z-aaaaaa',
  seq: 1,
  specialist: 'units',
  task: 't',
  model: 'm',
  backend: 'b',
  workspace: null,
  config_digest: 'sha256:0',
  fabric_version: '0.1.0',
  max_steps: 30,
  budget_s: 60,
};
const REQUEST = { ...START, kind: 'llm_request', seq: 2, step: 1, messages: 1, tools: ['finish_task'] };
const line = (value: unknown) => `${JSON.stringify(value)}\n`;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0xff, 0xfe]);

/** Each damaged runlog, and what `fabric replay` must say about it. */
const CASES: readonly (readonly [string, string | Buffer, RegExp])[] = [
  ['an empty file', '', /is empty: no run was recorded in it/],
  ['a file of blank lines', '\n\n  \n', /is empty/],
  ['a file holding only a torn first line', '{"v":1,"kind":"run_st', /holds only a torn line/],
  [
    'a runlog cut in the middle',
    `${line(START)}{"v":1,"kind":"llm_req\n${line(REQUEST)}`,
    /:2: not a JSON line; the runlog is damaged/,
  ],
  [
    'a foreign JSON file',
    line({ name: 'package', version: '1.0.0' }),
    /is not a fabric runlog: line 1 lacks kind, ts, run_id, seq/,
  ],
  ['a binary file', PNG, /is not a fabric runlog: line 1 is not JSON/],
  [
    'a runlog from a newer format',
    line({ ...START, v: 99 }),
    /runlog format v99, newer than this agent-fabric reads \(v1 and earlier\)\. Upgrade/,
  ],
  [
    'a runlog without run_start',
    line(REQUEST),
    /does not begin with run_start \(line 1 is llm_request, seq 2\)/,
  ],
  [
    'a runlog mixing two runs',
    line(START) + line({ ...REQUEST, run_id: 'other' }),
    /mixes runs: seq 2 belongs to other/,
  ],
];

describe('fabric replay of a runlog that is not a whole run', () => {
  let sandbox: Sandbox;
  let dir: string;
  beforeAll(async () => {
    sandbox = await makeSandbox();
    // A path with a space and non-ASCII letters, as a user's folder may have.
    dir = join(sandbox.dir, 'bad runs ü');
    await mkdir(dir);
  });
  afterAll(() => sandbox.cleanup());

  it.each(CASES)(
    'names the problem of %s, exits 2, and prints no timeline',
    async (name, content, message) => {
      const file = join(dir, `${name.replaceAll(' ', '-')}.jsonl`);
      await writeFile(file, content);
      for (const json of [false, true]) {
        const result = await spawnFabric(
          ['replay', file, '--config', sandbox.configPath, ...(json ? ['--json'] : [])],
          {
            env: testEnv(sandbox, 'http://127.0.0.1:9'),
            cwd: sandbox.dir,
          },
        );
        expect(result.exitCode, result.stderr).toBe(2);
        expect(result.stderr).toMatch(message);
        expect(result.stderr).toContain(file);
        expect(result.stderr).not.toMatch(/Unexpected error|running/);
        if (json) expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'runlog_corrupt' } });
        else expect(result.stdout).toBe('');
      }
    },
  );

  it('says there is no runlog at a path that does not exist, exit 2', async () => {
    const result = await spawnFabric(
      ['replay', join(dir, 'nothing here.jsonl'), '--config', sandbox.configPath],
      {
        env: testEnv(sandbox, 'http://127.0.0.1:9'),
        cwd: sandbox.dir,
      },
    );
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/No runlog at .*nothing here\.jsonl/);
  });
});
