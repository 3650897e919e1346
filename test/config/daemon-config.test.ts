import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config/load.ts';

const RAW = { specialists: { rust: { builder: 'builtin:rust' } } };

describe('the daemon config', () => {
  it('defaults to cargo build and cargo test, 3 attempts, a 300 s interval and 300 s of waiting for a model with --once', async () => {
    const config = await buildConfig(RAW, '/x/fabric.yaml', {}, '/x');
    expect(config.daemon).toEqual({
      specialist: 'rust',
      validate: ['cargo build', 'cargo test'],
      max_attempts: 3,
      interval_s: 300,
      backend_wait_s: 300,
      validation_reruns: 1,
    });
  });

  it('takes the model from LM_STUDIO_MODEL and the interval from OPEN_SPEC_DAEMON_INTERVAL', async () => {
    const env = { LM_STUDIO_MODEL: 'qwen/qwen3-coder-30b', OPEN_SPEC_DAEMON_INTERVAL: '60' };
    const config = await buildConfig(RAW, '/x/fabric.yaml', env, '/x');
    expect(config.daemon.model).toBe('qwen/qwen3-coder-30b');
    expect(config.daemon.interval_s).toBe(60);
  });

  it('takes an escalation list of models, and refuses an empty one', async () => {
    const config = await buildConfig(
      { ...RAW, daemon: { models: ['small/coder', 'big/coder'] } },
      '/x/fabric.yaml',
      {},
      '/x',
    );
    expect(config.daemon.models).toEqual(['small/coder', 'big/coder']);
    await expect(buildConfig({ ...RAW, daemon: { models: [] } }, '/x/fabric.yaml', {}, '/x')).rejects.toThrow(
      /daemon\.models: expected >=1/,
    );
  });

  it('takes auto, alone or as an entry of the list, and says what it expects otherwise', async () => {
    const build = (models: unknown) =>
      buildConfig({ ...RAW, daemon: { models } }, '/x/fabric.yaml', {}, '/x');
    expect((await build('auto')).daemon.models).toEqual(['auto']);
    expect((await build(['auto', 'gpt-5-mini'])).daemon.models).toEqual(['auto', 'gpt-5-mini']);
    await expect(build('automatic')).rejects.toThrow(
      /daemon\.models: expected `auto` \(the measured local models, best first\) or a list of models/,
    );
    await expect(build(['auto', 'big/coder', 'auto'])).rejects.toThrow(
      /daemon\.models: name auto at most once/,
    );
  });

  it('says what OPEN_SPEC_DAEMON_INTERVAL expects when it is not a number of seconds', async () => {
    await expect(
      buildConfig(RAW, '/x/fabric.yaml', { OPEN_SPEC_DAEMON_INTERVAL: '5m' }, '/x'),
    ).rejects.toThrow(/OPEN_SPEC_DAEMON_INTERVAL: expected a whole number of seconds/);
  });
});
