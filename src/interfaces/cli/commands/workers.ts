import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

export const WORKERS_HELP = `Usage: fabric workers [--json] [--config FILE]

Lists the workers of the Postgres queue (queue: postgres, FABRIC_DSN): each one's host,
specialists, runs in progress and last heartbeat, running first.

Options:
      --json           print { workers: [...] } as JSON
  -c, --config FILE    the config file
  -h, --help           show this help
`;

/** `fabric workers`: the worker registry. */
export async function workersCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs('workers', argv, {
    json: { type: 'boolean' },
    config: { type: 'string', short: 'c' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(WORKERS_HELP);
    return EXIT.ok;
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const fabric = createFabric(config, { env: io.env, lifetime: 'one_shot' });
  try {
    const services = await fabric.runQueue();
    if (services === null)
      throw new FabricError(
        'usage',
        'No queue is configured: set queue: postgres (or FABRIC_QUEUE=postgres) and FABRIC_DSN.',
      );
    const workers = await services.workers.list();
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ workers })}\n`);
      return EXIT.ok;
    }
    if (workers.length === 0) io.stdout.write('No workers have reported.\n');
    for (const w of workers) {
      io.stdout.write(
        `${w.id}  ${w.state}  ${w.host} (pid ${w.pid})  ${w.specialists.join(',')}  ` +
          `${w.runs.length}/${w.concurrency} runs${w.runs.length > 0 ? ` (${w.runs.join(', ')})` : ''}  heartbeat ${w.last_heartbeat}\n`,
      );
    }
    return EXIT.ok;
  } finally {
    await fabric.close();
  }
}
