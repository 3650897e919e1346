import { mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { emptyState, freshRecord } from '../../../src/application/daemon/daemon-state.ts';
import { StateFile } from '../../../src/infrastructure/daemon/state-file.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { tempDir } from '../../support/temp-dirs.ts';
import { makeFabric } from './http-harness.ts';

describe('GET /v1/daemon', () => {
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await sandbox?.cleanup();
  });

  it("serves each repository's daemon status from its checklists and state file, with the control plane off", async () => {
    sandbox = await makeSandbox();
    const repo = await realpath(await tempDir('daemon-http-'));
    await mkdir(join(repo, 'openspec/changes/alpha'), { recursive: true });
    await writeFile(
      join(repo, 'openspec/changes/alpha/tasks.md'),
      '- [x] 1.1 First\n- [ ] 1.2 Second\n- [ ] 1.3 Third\n',
    );
    const state = emptyState(repo, new Date());
    state.tasks.push(
      Object.assign(freshRecord('alpha', '1.1', 'First'), {
        status: 'done' as const,
        attempts: 1,
        run_ids: ['r1'],
        models: ['big/coder'],
        commit: 'c1',
      }),
      Object.assign(freshRecord('alpha', '1.2', 'Second'), {
        status: 'blocked' as const,
        attempts: 3,
        run_ids: ['r2', 'r3', 'r4'],
        models: ['small/coder', 'small/coder', 'big/coder'],
      }),
    );
    state.backend = { state: 'down', last_ok: null, failures: 2, backoff_s: 2, last_error: 'refused' };
    await new StateFile(sandbox.runsDir, repo).save(state);
    const fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
    const app = createApp({ fabric, requireToken: false });

    const one = await app.request(`/v1/daemon?repo=${encodeURIComponent(repo)}`);
    expect(one.status).toBe(200);
    const body = (await one.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      changes: [
        {
          id: 'alpha',
          done: 1,
          pending: 1,
          blocked: 1,
          tasks: [
            {
              change: 'alpha',
              id: '1.1',
              text: 'First',
              status: 'done',
              attempts: 1,
              run_ids: ['r1'],
              commit: 'c1',
            },
            {
              change: 'alpha',
              id: '1.2',
              text: 'Second',
              status: 'blocked',
              attempts: 3,
              run_ids: ['r2', 'r3', 'r4'],
              commit: null,
            },
            {
              change: 'alpha',
              id: '1.3',
              text: 'Third',
              status: 'pending',
              attempts: 0,
              run_ids: [],
              commit: null,
            },
          ],
        },
      ],
      stats: {
        attempts: 4,
        succeeded: 1,
        success_rate: 0.25,
        first_attempt_success_rate: 0.5,
        // Escalation: each model's attempts and successes, in the order first used.
        models: [
          { model: 'big/coder', attempts: 2, succeeded: 1, success_rate: 0.5 },
          { model: 'small/coder', attempts: 2, succeeded: 0, success_rate: 0 },
        ],
      },
      backend: { state: 'down', last_ok: null, failures: 2, backoff_s: 2 },
    });

    const all = (await (await app.request('/v1/daemon')).json()) as { daemons: { repo: string }[] };
    expect(all.daemons.map((d) => d.repo)).toEqual([repo]);
    await fabric.close();
  });

  it('answers 404 for a repository that does not exist', async () => {
    sandbox = await makeSandbox();
    const fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
    const response = await createApp({ fabric, requireToken: false }).request(
      '/v1/daemon?repo=/no/such/repo',
    );
    expect(response.status).toBe(404);
    await fabric.close();
  });
});
