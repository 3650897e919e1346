import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Sandbox,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';

/** Mistyped commands and flags (issue 20): our own words, the closest known name, exit 2, nothing run. */
describe('fabric given a mistyped command or flag', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await makeSandbox();
  });
  afterAll(() => sandbox.cleanup());

  const env = () => testEnv(sandbox, 'http://127.0.0.1:9');

  it('suggests --max-steps for --max-step, without parseArgs wording, exit 2', async () => {
    const result = await spawnFabric(['run', '-s', 'units', '--max-step', '1', 'task'], {
      env: env(),
      cwd: sandbox.dir,
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim()).toBe(
      'fabric run: unknown option --max-step. Did you mean --max-steps? (fabric run --help)',
    );
    expect(result.stdout).toBe('');
  });

  it('suggests the closest flag for every command that takes options', async () => {
    const commands = [
      'run',
      'replay',
      'specialists',
      'models',
      'health',
      'runs',
      'control',
      'mcp',
      'daemon',
      'battery',
      'init',
      'serve',
      'worker',
      'workers',
    ];
    for (const command of commands) {
      const result = await runFabricInProcess([command, '--hepl'], { env: env(), cwd: sandbox.dir });
      expect({ command, exitCode: result.exitCode, stderr: result.stderr }).toEqual({
        command,
        exitCode: 2,
        stderr: `fabric ${command}: unknown option --hepl. Did you mean --help? (fabric ${command} --help)\n`,
      });
    }
  });

  it('says nothing about a suggestion when no flag is close', async () => {
    const result = await runFabricInProcess(['specialists', '--zzzzzz'], { env: env(), cwd: sandbox.dir });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toBe('fabric specialists: unknown option --zzzzzz. (fabric specialists --help)\n');
  });

  it('says a flag is missing its value, or that a switch takes none', async () => {
    const cases = [
      [['run', '-s', 'units', 'task', '--model'], 'fabric run: --model needs a value: --model VALUE.'],
      [
        ['run', '-m', '--json', 'task'],
        'fabric run: -m needs a value, but is followed by "--json". For a value that starts with a dash, write --model=--json.',
      ],
      [
        ['specialists', '--json=yes'],
        'fabric specialists: --json is a switch and takes no value (given "yes"); write --json alone.',
      ],
    ] as const;
    for (const [args, message] of cases) {
      const result = await runFabricInProcess(args, { env: env(), cwd: sandbox.dir });
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toMatch(/argument missing|To specify|does not take an argument/);
    }
  });

  it('suggests `run` for `fabric rn`, exit 2', async () => {
    const result = await spawnFabric(['rn', 'task'], { env: env(), cwd: sandbox.dir });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(
      /^fabric: unknown command "rn"\. Did you mean `fabric run`\? Commands: run, /,
    );
  });

  it('suggests the closest action of runs, control and daemon', async () => {
    for (const [args, hint] of [
      [['runs', 'shw'], 'Did you mean "show"?'],
      [['control', 'migrat'], 'Did you mean "migrate"?'],
      [['daemon', 'stauts'], 'Did you mean "status"?'],
    ] as const) {
      const result = await runFabricInProcess(args, { env: env(), cwd: sandbox.dir });
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(hint);
    }
  });
});
