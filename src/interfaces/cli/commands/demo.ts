import { relative } from 'node:path';
import { loadConfig } from '../../../config/load.ts';
import type { Environment } from '../../../config/env.ts';
import { DEMO_MODEL, DEMO_TASK, prepareDemo } from '../../../composition/demo.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { FabricError } from '../../../domain/errors.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { formatPayload } from '../payload-format.ts';
import { ProgressReporter } from '../progress.ts';
import { styleFor } from '../style.ts';
import { serveCommand } from './serve.ts';

export const DEMO_HELP = `Usage: fabric demo [--serve [--port N]]

Shows the fabric at work with no model server and no config: the real loop, rust pack, sandbox,
cargo, runlog, control plane and viewer, driven by a built-in scripted model (DEMO ONLY: its
model id is ${DEMO_MODEL}, and it plays the same fixed script whatever the task) that listens on
127.0.0.1 for the demo's length. In a new temporary directory it names, on a copy of the
example compositor crate, the rust specialist lists and reads the sources, adds
Region::contains_point with edit_file, runs cargo_check and finishes; then it prints how to
look at the run (fabric runs, fabric replay, the viewer). Needs cargo on PATH.

Options:
      --serve         then serve the viewer with that run on 127.0.0.1 until Ctrl-C or SIGTERM,
                      printing the run's page URL
  -p, --port PORT     the viewer's port with --serve (default 0: any free port)
  -h, --help          show this help

For a real model: LM Studio (\`lms get qwen/qwen3-8b\`) or Ollama (\`ollama pull qwen3:8b\`);
the README's "Getting a model" suggests models by GPU memory.

Exit codes: 0 the demo ran · 1 the run failed (e.g. no cargo) · 2 usage error · 130 cancelled
`;

/** `fabric demo`: a run of the rust specialist against the scripted model, then how to look at it. */
export async function demoCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('demo', argv, {
    serve: { type: 'boolean' },
    port: { type: 'string', short: 'p' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(DEMO_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0)
    throw new FabricError(
      'usage',
      `fabric demo takes no task: its scripted model plays a fixed one (got "${positionals.join(' ')}"). ` +
        'For your own task, use fabric run with a real model.',
    );
  if (values.port !== undefined && values.serve !== true)
    throw new FabricError('usage', '--port goes with --serve: fabric demo --serve --port N.');
  const style = styleFor(io.stderr, io.env);
  // The user's FABRIC_*, LM_STUDIO_URL and OLLAMA_HOST are not the demo's: only its own config counts.
  const env: Environment = { PATH: io.env.PATH, HOME: io.env.HOME };
  const place = await prepareDemo();
  io.stderr.write(
    style.bold(`fabric demo: a DEMO with a scripted model (${DEMO_MODEL}), not a real one.\n`) +
      style.dim(`Working in ${place.dir} (the example crate copied to ./compositor).\n\n`),
  );
  let runId: string;
  let runlogPath: string;
  try {
    const config = await loadConfig({ configPath: place.configPath, cwd: place.dir, env });
    const fabric = createFabric(config, {
      lifetime: 'one_shot',
      env,
      onDegraded: (message) => io.stderr.write(style.yellow(`${message}\n`)),
    });
    const result = await fabric
      .run({
        specialist: 'rust',
        task: DEMO_TASK,
        workspace: place.workspace,
        model: DEMO_MODEL,
        observers: [new ProgressReporter(io.stderr, style, { showReasoning: false })],
        signal: io.signal,
      })
      .finally(() => fabric.close());
    runId = result.run_id;
    runlogPath = result.runlog;
    if (result.payload) io.stdout.write(formatPayload(result.payload));
    if (result.status !== 'succeeded') {
      io.stderr.write(
        `fabric demo: the demo run ${result.status}${result.error ? `: ${result.error.message}` : ''}. ` +
          `Its runlog: ${result.runlog}. The demo needs cargo on PATH (https://rustup.rs).\n`,
      );
      return result.status === 'cancelled' || result.status === 'interrupted'
        ? EXIT.cancelled
        : EXIT.runFailed;
    }
  } finally {
    await place.model.stop();
  }
  const runlog = relative(place.dir, runlogPath);
  io.stdout.write(
    `\nDemo run ${runId} succeeded (model ${DEMO_MODEL}, scripted). Everything is in ${place.dir}:\n` +
      '  compositor/src/region.rs   the edited file, with Region::contains_point\n' +
      `  ${runlog}   every step the run took\n\n` +
      'Look at it:\n' +
      `  cd ${place.dir}\n${lookAt(runId)}\n` +
      'With a real model instead (README, "Getting a model"): fabric init, then fabric run.\n',
  );
  if (values.serve !== true) return EXIT.ok;
  const serveArgs = ['--host', '127.0.0.1', '--port', values.port ?? '0', '--config', place.configPath];
  return serveCommand(serveArgs, { ...io, env, cwd: place.dir }, (url) => {
    io.stdout.write(`\nThe viewer, with the demo run (Ctrl-C stops it):\n  ${url}/runs/${runId}\n`);
  });
}

/** The commands that show the run, each with what it shows, in one column. */
function lookAt(runId: string): string {
  const lines: [string, string][] = [
    ['fabric runs', 'the run in the list'],
    [`fabric runs show ${runId}`, 'its result and figures'],
    [`fabric replay ${runId}`, 'its timeline, step by step'],
    ['fabric demo --serve', 'a new demo, then the viewer to click through it'],
  ];
  const width = Math.max(...lines.map(([command]) => command.length));
  return lines.map(([command, what]) => `  ${command.padEnd(width)}  ${what}\n`).join('');
}
