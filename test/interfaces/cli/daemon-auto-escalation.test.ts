import { afterEach, describe, expect, it } from 'vitest';
import {
  addModule,
  calls,
  DAEMON_CONFIG,
  daemonRepo,
  finish,
  git,
  rustModule,
  taskKey,
} from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import type { FakeModel } from '../../support/fake-llm-types.ts';
import { closedPortUrl } from '../../infrastructure/llm/llm-test-kit.ts';

/**
 * Issue 33: `daemon.models: auto` orders the daemon's escalation by what `fabric models probe`
 * measured of the models that behave (test/support/fake-llm-behaviour.ts), best first: the
 * measured best is tried first, not the smallest, and a model measured unable is never tried.
 */
describe('fabric daemon with daemon.models: auto', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  it('escalates in measured order, says the measurement and its date, and leaves out the model unable to call tools', async () => {
    const big: FakeModel = {
      id: 'big:32b',
      toolUse: true,
      behaviour: 'native',
      paramSize: '32B',
      contextLength: 8192,
    };
    const small: FakeModel = {
      id: 'small:7b',
      toolUse: true,
      behaviour: 'dialect',
      dialect: 'hermes',
      paramSize: '7B',
      contextLength: 8192,
    };
    const prose: FakeModel = {
      id: 'prose:3b',
      toolUse: true,
      behaviour: 'no_calls',
      paramSize: '3B',
      contextLength: 8192,
    };
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Add double\n' });
    server = await startFakeLlmServer({
      flavor: 'ollama',
      ollamaVersion: '0.12.6',
      models: [big, small, prose],
      byTask: [
        {
          match: taskKey('alpha', '1.1'),
          script: [
            // The first model's one attempt: its test fails. The second's: right.
            addModule('double', rustModule('double', 'x + 1', 'assert_eq!(super::double(4), 8);')),
            finish('Added double.'),
            calls({
              name: 'edit_file',
              arguments: { path: 'src/double.rs', old_text: 'x + 1', new_text: 'x * 2' },
            }),
            finish('Fixed double.'),
          ],
        },
      ],
    });
    sandbox = await makeSandbox({ ...DAEMON_CONFIG, daemon: { models: 'auto', validation_reruns: 0 } });
    const env = { ...testEnv(sandbox, await closedPortUrl()), OLLAMA_HOST: server.url };
    const probe = await spawnFabric(['models', 'probe', '--timeout', '20', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(probe.exitCode, probe.stderr).toBe(0);
    // Measured; from here on the models follow the task's script.
    for (const model of [big, small, prose]) delete model.behaviour;
    const probed = server.chatRequests().length;

    const run = await spawnFabric(
      ['daemon', '--repo', repo, '--once', '--max-attempts', '1', '--json', '--config', sandbox.configPath],
      { env, cwd: sandbox.dir },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const escalation = events.find((e) => e.event === 'escalation') as {
      models: { model: string; server: string; measurement: string }[];
      left_out: { model: string; why: string }[];
    };
    expect(escalation.models.map((step) => step.model)).toEqual(['big:32b', 'small:7b']);
    expect(escalation.models[0]?.measurement).toMatch(
      /^probe score 1 with native tool calls \(probed \d{4}-\d\d-\d\d\)$/,
    );
    expect(escalation.models[1]?.measurement).toMatch(
      /^probe score 0\.\d+ with tool calls as text \(hermes\)/,
    );
    expect(escalation.models[0]?.server).toBe(`ollama ${server.url}`);
    expect(escalation.left_out).toEqual([
      { model: 'prose:3b', why: `measured unable to call tools on ollama ${server.url}` },
    ]);
    // The log names the measurement and its date.
    expect(run.stderr).toMatch(
      /1\. big:32b: probe score 1 with native tool calls \(probed \d{4}-\d\d-\d\d\), on ollama /,
    );
    expect(run.stderr).toContain('left out: prose:3b: measured unable to call tools');
    // The measured best first, not the smallest; the model unable to call tools never.
    expect(run.stderr).toContain('▶ alpha 1.1 Add double — attempt 1 (big:32b)');
    expect(run.stderr).toContain('▶ alpha 1.1 Add double — attempt 2 (small:7b)');
    const asked = server
      .chatRequests()
      .slice(probed)
      .map((r) => (r.body as { model: string }).model);
    expect(asked).toEqual(['big:32b', 'big:32b', 'small:7b', 'small:7b']);
    expect(await git(repo, 'log', '-1', '--format=%s')).toBe('alpha 1.1: Add double');
  }, 180_000);

  it('refuses to start with auto and no card, saying how to measure', async () => {
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Add double\n' });
    server = await startFakeLlmServer({
      flavor: 'ollama',
      models: [{ id: 'small:7b', toolUse: true, paramSize: '7B' }],
    });
    sandbox = await makeSandbox({ ...DAEMON_CONFIG, daemon: { models: 'auto' } });
    const env = { ...testEnv(sandbox, await closedPortUrl()), OLLAMA_HOST: server.url };
    const run = await spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(run.exitCode).toBe(4);
    expect(run.stderr).toContain('daemon.models is auto, but no local model was measured able to call tools');
    expect(run.stderr).toContain('small:7b: no measurement: `fabric models probe small:7b` measures it');
    expect(server.chatRequests()).toEqual([]);
    expect(await git(repo, 'status', '--porcelain')).toBe('');
  }, 120_000);
});
