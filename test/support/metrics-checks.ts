import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';

const PROMTOOL = '/usr/bin/promtool';

/** A loopback port nothing listens on now (for a metrics or Prometheus listener). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * What `promtool check metrics` says of a /metrics text (written to `dir` as `name`): its exit
 * code (0: accepted) and its output, for the assertion's message.
 */
export async function promtoolCheck(
  dir: string,
  name: string,
  text: string,
): Promise<{ exitCode: number | undefined; output: string }> {
  const file = join(dir, name);
  await writeFile(file, text);
  const check = await execa(PROMTOOL, ['check', 'metrics'], { inputFile: file, reject: false });
  return { exitCode: check.exitCode, output: `${check.stdout}${check.stderr}` };
}
