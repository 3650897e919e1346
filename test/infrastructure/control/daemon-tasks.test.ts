import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshRecord } from '../../../src/application/daemon/daemon-state.ts';
import { PostgresControlStore } from '../../../src/infrastructure/control/postgres-control-store.ts';
import { createTestDatabase } from './pg-test-db.ts';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let store: PostgresControlStore;

beforeAll(async () => {
  database = await createTestDatabase();
  store = new PostgresControlStore(database.dsn);
  await store.migrate();
});

afterAll(async () => {
  await store?.close();
  await database?.drop();
});

describe('control.daemon_tasks', () => {
  it('keeps one row per repository, change and task, rewritten as the task goes', async () => {
    const task = freshRecord('alpha', '1.2', 'Add double');
    Object.assign(task, { status: 'running', attempts: 1, run_ids: ['r1'], diagnostics: 'bad\u0000byte' });
    await store.recordDaemonTask('/repo', task);
    Object.assign(task, {
      status: 'done',
      attempts: 2,
      run_ids: ['r1', 'r2'],
      commit: 'abc',
      seconds: 4.5,
      tokens: 240,
      files_changed: 2,
      lines_added: 9,
      lines_removed: 1,
      tests_passed: 3,
      clippy_before: 0,
      clippy_after: 1,
    });
    await store.recordDaemonTask('/repo', task);
    await store.recordDaemonTask('/other', freshRecord('alpha', '1.2', 'Add double'));
    const rows = await store.daemonTasks('/repo');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      change: 'alpha',
      task_id: '1.2',
      status: 'done',
      attempts: 2,
      run_ids: ['r1', 'r2'],
      commit: 'abc',
      seconds: 4.5,
      tokens: 240,
      files_changed: 2,
      tests_passed: 3,
      clippy_before: 0,
      clippy_after: 1,
      clippy_note: null,
    });
  });

  it('keeps why a clippy figure is missing', async () => {
    const task = freshRecord('alpha', '1.3', 'Add half');
    Object.assign(task, { status: 'done', clippy_note: 'cargo clippy is not allowed' });
    await store.recordDaemonTask('/repo', task);
    const row = (await store.daemonTasks('/repo')).find((r) => r.task_id === '1.3');
    expect(row).toMatchObject({
      clippy_before: null,
      clippy_after: null,
      clippy_note: 'cargo clippy is not allowed',
    });
  });
});
