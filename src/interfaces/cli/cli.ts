import { ENVIRONMENT_VARIABLES } from '../../config/env.ts';
import { createLogger } from './logger.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { didYouMean } from '../../domain/words.ts';
import { FABRIC_VERSION } from '../../composition/version.ts';
import { exitCodeFor } from './exit-code.ts';
import { type CliIo, EXIT } from './io.ts';

type Command = (argv: readonly string[], io: CliIo) => Promise<number>;

// Commands are imported when used, so `fabric --help` does not load the whole runtime.
const COMMANDS: Readonly<Record<string, { summary: string; run: Command }>> = {
  run: {
    summary: 'run a task with a specialist',
    run: async (argv, io) => (await import('./commands/run.ts')).runCommand(argv, io),
  },
  resume: {
    summary: 'go on with a run whose process stopped, from its runlog (same run id)',
    run: async (argv, io) => (await import('./commands/resume.ts')).resumeCommand(argv, io),
  },
  steer: {
    summary: 'tell a running run something after its current step (`--interrupt` cuts the turn first)',
    run: async (argv, io) => (await import('./commands/steer.ts')).steerCommand(argv, io),
  },
  pause: {
    summary: 'hold a running run after its current step (no model request until `fabric unpause`)',
    run: async (argv, io) => (await import('./commands/steer.ts')).pauseCommand(argv, io),
  },
  unpause: {
    summary: 'let a paused run go on',
    run: async (argv, io) => (await import('./commands/steer.ts')).unpauseCommand(argv, io),
  },
  approvals: {
    summary: 'list, answer (approve or deny) and revoke the approvals a policy `ask` rule waits for',
    run: async (argv, io) => (await import('./commands/approvals.ts')).approvalsCommand(argv, io),
  },
  replay: {
    summary: "show a run's timeline, or re-run its recorded model turns and compare (`--execute`)",
    run: async (argv, io) => (await import('./commands/replay.ts')).replayCommand(argv, io),
  },
  specialists: {
    summary: 'list the configured specialists',
    run: async (argv, io) => (await import('./commands/specialists.ts')).specialistsCommand(argv, io),
  },
  policy: {
    summary:
      'say what the policy does with a call and which rule decides (`fabric policy check -- cargo tree`)',
    run: async (argv, io) => (await import('./commands/policy.ts')).policyCommand(argv, io),
  },
  models: {
    summary: "list every backend's models and which one a run would use",
    run: async (argv, io) => (await import('./commands/models.ts')).modelsCommand(argv, io),
  },
  health: {
    summary: 'check the model backends (`fabric health lm`)',
    run: async (argv, io) => (await import('./commands/health.ts')).healthCommand(argv, io),
  },
  runs: {
    summary: 'list past runs, or show one (`fabric runs show RUN`)',
    run: async (argv, io) => (await import('./commands/runs.ts')).runsCommand(argv, io),
  },
  control: {
    summary: 'the control plane: migrate, sync runlogs, export usage and health',
    run: async (argv, io) => (await import('./commands/control.ts')).controlCommand(argv, io),
  },
  mcp: {
    summary: 'serve the fabric as an MCP server on stdio (run_task, list_specialists, ...)',
    run: async (argv, io) => (await import('./commands/mcp.ts')).mcpCommand(argv, io),
  },
  daemon: {
    summary: 'implement OpenSpec tasks one by one: run, validate, tick, commit (`fabric daemon status`)',
    run: async (argv, io) => (await import('./commands/daemon.ts')).daemonCommand(argv, io),
  },
  battery: {
    summary: 'run the same tasks with several models and compare them (a matrix, --json, --report)',
    run: async (argv, io) => (await import('./commands/battery.ts')).batteryCommand(argv, io),
  },
  demo: {
    summary: 'see the fabric work with no model server: a scripted demo model edits the example crate',
    run: async (argv, io) => (await import('./commands/demo.ts')).demoCommand(argv, io),
  },
  init: {
    summary: 'write a starter fabric.yaml and custom pack in the working directory, ready to run',
    run: async (argv, io) => (await import('./commands/init.ts')).initCommand(argv, io),
  },
  completion: {
    summary: 'print a shell completion script (`fabric completion bash|zsh|fish`)',
    run: async (argv, io) =>
      (await import('./commands/completion.ts')).completionCommand(argv, io, Object.keys(COMMANDS)),
  },
  serve: {
    summary: 'serve the HTTP API: start, stream, list, cancel and replay runs (docs/http-api.md)',
    run: async (argv, io) => (await import('./commands/serve.ts')).serveCommand(argv, io),
  },
  worker: {
    summary: 'take runs queued in Postgres and run them, on any host with the DSN (docs/queue.md)',
    run: async (argv, io) => (await import('./commands/worker.ts')).workerCommand(argv, io),
  },
  otel: {
    summary: "send finished runs' OpenTelemetry traces to an OTLP receiver (`fabric otel export RUN`)",
    run: async (argv, io) => (await import('./commands/otel.ts')).otelCommand(argv, io),
  },
  workers: {
    summary: "list the queue's workers: host, specialists, runs in progress, last heartbeat",
    run: async (argv, io) => (await import('./commands/workers.ts')).workersCommand(argv, io),
  },
};

function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const commands = Object.entries(COMMANDS)
    .map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`)
    .join('\n');
  const envWidth = Math.max(...Object.keys(ENVIRONMENT_VARIABLES).map((name) => name.length));
  const env = Object.entries(ENVIRONMENT_VARIABLES)
    .map(([name, what]) => `  ${name.padEnd(envWidth)} ${what}`)
    .join('\n');
  return `agent-fabric ${FABRIC_VERSION}: a specialist agent runtime for local models (LM Studio, Ollama).

Usage: fabric <command> [options]

Commands:
${commands}

Run \`fabric <command> --help\` for a command's options.

Environment (overrides the config file; command-line flags override both):
${env}
`;
}

/** The CLI, callable in-process: returns the exit code instead of exiting. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(mainHelp());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version' || name === '-V') {
    io.stdout.write(`${FABRIC_VERSION}\n`);
    return EXIT.ok;
  }
  const command = COMMANDS[name];
  if (!command) {
    const names = Object.keys(COMMANDS);
    const hint = name.startsWith('-')
      ? ` Options come after the command: fabric <command> ${name}.`
      : didYouMean(name, names, (known) => `\`fabric ${known}\``);
    io.stderr.write(
      `fabric: unknown command "${name}".${hint} Commands: ${names.join(', ')}. (fabric --help)\n`,
    );
    return EXIT.usage;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    const fabricError =
      error instanceof FabricError
        ? error
        : new FabricError('internal', `Unexpected error: ${errorMessage(error)}`);
    // A message that already names its command ("fabric health needs …") is not named twice.
    const named = fabricError.message.startsWith(`fabric ${name} `);
    if (jsonLogAsked(rest))
      createLogger({ command: name, format: 'json', stream: io.stderr }).error(fabricError.message, {
        code: fabricError.code,
      });
    else io.stderr.write(`${named ? '' : `fabric ${name}: `}${fabricError.message}\n`);
    if (rest.includes('--json')) {
      io.stdout.write(
        `${JSON.stringify({ error: { code: fabricError.code, message: fabricError.message } })}\n`,
      );
    }
    return exitCodeFor(fabricError.code);
  }
}

/** `--log-format json` on the command line: its failure is a JSON log line too. */
function jsonLogAsked(args: readonly string[]): boolean {
  const at = args.indexOf('--log-format');
  return args.includes('--log-format=json') || (at >= 0 && args[at + 1] === 'json');
}
