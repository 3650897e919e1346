import { loadConfig } from '../../../config/load.ts';
import { listSpecialists } from '../../../composition/specialists.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

export const SPECIALISTS_HELP = `Usage: fabric specialists [--json] [--config FILE]

Lists the specialists the config defines: name, pack builder, model and workspace.
Add one by adding an entry under \`specialists:\` in fabric.yaml (see packs/example/).
`;

/** `fabric specialists`. */
export async function specialistsCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs('specialists', argv, {
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(SPECIALISTS_HELP);
    return EXIT.ok;
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const list = listSpecialists(config);
  if (values.json) {
    io.stdout.write(`${JSON.stringify({ config: config.source, specialists: list })}\n`);
    return EXIT.ok;
  }
  io.stdout.write(`Specialists in ${config.source}:\n`);
  for (const s of list) {
    io.stdout.write(`\n  ${s.name}${s.description ? ` — ${s.description}` : ''}\n`);
    io.stdout.write(`    builder:   ${s.builder}\n`);
    io.stdout.write(`    model:     ${s.model ?? '(best available)'}\n`);
    if (s.workspace) io.stdout.write(`    workspace: ${s.workspace}\n`);
  }
  return EXIT.ok;
}
