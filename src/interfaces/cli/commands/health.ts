import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { backendHealthView } from '../../../application/models/backend-views.ts';
import { Fabric } from '../../../composition/fabric.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { styleFor } from '../style.ts';
import { plural } from '../../../domain/words.ts';

export const HEALTH_HELP = `Usage: fabric health lm [--json] [--config FILE]

Checks every configured model backend (each LM Studio server, Ollama, each of llm.backends:
llama-server, vLLM, keyed OpenAI-compatible endpoints), concurrently and with the probe timeout
(llm.probe_timeout_ms): whether it answers as that server should (up, down, denied: a key
refused, or loading its model), how fast, how many models it has, how many a run could use (chat models not known to
lack tools) and take tools, and the windows they are served at. A hosted endpoint is used only
for a model named. A status code alone proves nothing: LM Studio answers unknown routes 200 with
an error field; a llama-server still loading its model is reported at once (a run waits for it).

Options:
  -c, --config FILE   the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json          print { usable, backends } as one JSON object on stdout
  -h, --help          show this help

Exit codes: 0 some backend is usable · 2 usage or config error · 4 no backend is usable

Example:
  LM_STUDIO_URL=http://a:1234,http://b:1234 OLLAMA_HOST=0.0.0.0 fabric health lm
`;

/** `fabric health lm`. */
export async function healthCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('health', argv, {
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(HEALTH_HELP);
    return EXIT.ok;
  }
  if (positionals.length !== 1 || positionals[0] !== 'lm') {
    const problem =
      positionals.length === 0
        ? 'fabric health needs to know what to check: `fabric health lm` checks the model backends.'
        : `fabric health cannot check "${positionals.join(' ')}"; the one subject is \`lm\` (\`fabric health lm\`).`;
    throw new FabricError('usage', `${problem}\n\n${HEALTH_HELP}`);
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const probes = await new Fabric(config).catalog.probe(io.signal);
  const backends = probes.map(backendHealthView);
  const usable = backends.some((backend) => backend.usable);
  if (values.json) {
    io.stdout.write(`${JSON.stringify({ usable, backends })}\n`);
  } else {
    const style = styleFor(io.stdout, io.env);
    const width = Math.max(...backends.map((b) => `${b.backend} ${b.base_url}`.length));
    for (const b of backends) {
      const state =
        b.state !== 'up' ? style.red(b.state) : b.usable ? style.green('up  ') : style.yellow('up  ');
      const window = b.windows.length === 0 ? '' : `, window ${b.windows.join('/')}`;
      const detail =
        b.state !== 'up'
          ? (b.error ?? '')
          : `${plural(b.models, 'model')}, ${b.usable_models} usable, ${b.tool_models} with tools${window}${b.hosted ? ' (hosted: used only when named)' : ''}`;
      io.stdout.write(
        `${`${b.backend} ${b.base_url}`.padEnd(width)}  ${state}  ${`${b.latency_ms} ms`.padStart(7)}  ${detail}\n`,
      );
    }
    if (!usable) {
      io.stdout.write(
        style.red('No backend is usable.') +
          ' Start LM Studio or Ollama, load (`lms load`) or pull (`ollama pull`) a tool-capable model, ' +
          'or point LM_STUDIO_URL / OLLAMA_HOST at a server that has one.\n',
      );
    }
  }
  return usable ? EXIT.ok : EXIT.noModel;
}
