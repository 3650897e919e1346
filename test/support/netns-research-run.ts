/**
 * Runs inside a network namespace made by `unshare -rn` (see `runInUnroutableNetwork`): starts
 * the fake LM Studio on the namespace's loopback, then the real `fabric run --specialist research`
 * whose scripted model fetches URLs that no route leads to. Prints one JSON line: the CLI's exit
 * code, stdout, stderr and the runlog's events.
 */
import { readFile } from 'node:fs/promises';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { makeSandbox, spawnFabric, testEnv } from './fabric-cli.ts';
import { startFakeLlmServer } from './fake-llm-server.ts';

const urls = JSON.parse(process.argv[2] ?? '[]') as string[];
const allowedHosts = urls.map((url) => new URL(url).host);

const llm = await startFakeLlmServer({
  flavor: 'lm_studio',
  models: [{ id: 'qwen/qwen3-8b', toolUse: true }],
  script: [
    { reply: { toolCalls: urls.map((url) => ({ name: 'fetch_url', arguments: { url } })) } },
    {
      reply: {
        toolCalls: [{ name: 'finish_task', arguments: { answer: 'No page could be reached.' } }],
      },
    },
  ],
});
const sandbox = await makeSandbox({
  specialists: {
    research: {
      builder: 'builtin:research',
      network_allowed: true,
      // Documentation addresses are refused as reserved unless allowlisted: the guard lets these
      // through so that the connection itself is what fails.
      allowed_hosts: allowedHosts,
      options: { fetch_timeout_ms: 1500 },
    },
  },
});
try {
  const result = await spawnFabric(['run', '-s', 'research', '--json', '--config', sandbox.configPath, 'q'], {
    env: testEnv(sandbox, llm.url),
    cwd: sandbox.dir,
  });
  let events: unknown[] = [];
  try {
    const runlog = (JSON.parse(result.stdout) as { runlog: string }).runlog;
    events = [...parseRunlog(await readFile(runlog, 'utf8'), runlog).events];
  } catch {
    // No result on stdout: the process died; the test reports stderr.
  }
  process.stdout.write(
    `${JSON.stringify({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr, events })}\n`,
  );
} finally {
  await llm.stop();
  await sandbox.cleanup();
}
