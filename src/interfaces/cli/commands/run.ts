import { resolve } from 'node:path';
import type { RunObserver } from '../../../application/ports.ts';
import { loadConfig } from '../../../config/load.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { exitCodeForRun } from '../exit-code.ts';
import { type CliIo, EXIT } from '../io.ts';
import { formatPayload } from '../payload-format.ts';
import { ProgressReporter } from '../progress.ts';
import { styleFor } from '../style.ts';
import { readTask } from '../task-input.ts';
import { terminalApprovalPrompt } from '../approval-prompt.ts';
import { ON_APPROVAL, type OnApproval } from '../../../domain/approvals.ts';
import { FabricError } from '../../../domain/errors.ts';

export const RUN_HELP = `Usage: fabric run --specialist NAME [options] "TASK"
       fabric run --specialist NAME [options] -        (the task from stdin)
       fabric run --specialist NAME [options] --task-file FILE

Runs TASK with a specialist until the model calls finish_task, writing every step to
<runs_dir>/<run_id>/runlog.jsonl. Progress goes to stderr; the result to stdout.

Options:
  -s, --specialist NAME   the specialist to use (\`fabric specialists\` lists them)   [required]
  -w, --workspace DIR     the workspace the pack works in (overrides the configured one)
  -m, --model ID          the model to use (a model id or an alias from llm.models); must exist
  -f, --task-file FILE    read the task from FILE (a long task, a spec, an issue's text)
      --max-steps N       stop after N model turns (default: the specialist's, else loop.max_steps = 30)
  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json              print the RunResult as one JSON object on stdout
      --show-reasoning    print the model's reasoning whole (default: one dim line a turn)
      --events jsonl      stream the run's events (the runlog's lines) to stdout as they
                          happen, one JSON object a line; with --json the RunResult follows
      --on-approval MODE  what a call a policy \`ask\` rule names does (SPEC §19): wait (for an
                          answer here or from \`fabric approvals answer\`), park (the run stops
                          as awaiting_approval; exit 5), deny (the model is told), or fail
                          (default: policy.on_approval, else wait with a prompt on a
                          terminal, deny without one: a run never hangs)
  -h, --help              show this help

Exit codes: 0 succeeded · 1 failed · 2 usage or config error · 3 max_steps reached
            4 no usable model or backend · 5 parked awaiting approval · 130 cancelled (Ctrl-C)

Examples:
  fabric run --specialist rust --workspace ./my-compositor "Add damage tracking to Output"
  git diff | fabric run --specialist rust --events jsonl - | jq -c 'select(.kind == "tool_call")'
`;

/** `fabric run`. */
export async function runCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('run', argv, {
    specialist: { type: 'string', short: 's' },
    workspace: { type: 'string', short: 'w' },
    model: { type: 'string', short: 'm' },
    'task-file': { type: 'string', short: 'f' },
    'max-steps': { type: 'string' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    events: { type: 'string' },
    'show-reasoning': { type: 'boolean' },
    'on-approval': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(RUN_HELP);
    return EXIT.ok;
  }
  if (values.events !== undefined && values.events !== 'jsonl') {
    io.stderr.write(`fabric run: --events takes "jsonl", not "${values.events}".\n`);
    return EXIT.usage;
  }
  const { task, hint } = await readTask(positionals, values['task-file'], io);
  if (!values.specialist || task === '') {
    io.stderr.write(
      `fabric run needs ${!values.specialist ? '--specialist NAME' : positionals[0] === '-' ? 'a TASK (standard input was empty)' : 'a TASK (or - for standard input, or --task-file FILE)'}.\n\n${RUN_HELP}`,
    );
    return EXIT.usage;
  }
  const maxSteps = positiveInt('--max-steps', values['max-steps']);
  const onApproval = onApprovalFlag(values['on-approval']);
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  // The run checks it before the model is chosen: a wrong path is a usage error (exit 2),
  // whatever the backend says.
  const workspace = values.workspace === undefined ? undefined : resolve(io.cwd, values.workspace);
  // One run, then exit: the embedded control database is not booted for it; whoever opens it
  // next writes the run in from its runlog (a Postgres store is mirrored to live).
  const style = styleFor(io.stderr, io.env);
  if (hint !== undefined) io.stderr.write(style.dim(`${hint}\n`));
  // One process, one run: the process-wide notice (once per outage) is the run's one notice, so a
  // message the run also hears (the control plane's) is printed once.
  const said = new Set<string>();
  const say = (message: string, paint: (text: string) => string) => {
    if (said.has(message)) return;
    said.add(message);
    io.stderr.write(paint(`${message}\n`));
  };
  const fabric = createFabric(config, {
    lifetime: 'one_shot',
    // The messages name the control plane themselves.
    onDegraded: (message) => say(message, style.yellow),
  });
  const result = await fabric
    .run({
      specialist: values.specialist,
      task,
      workspace,
      model: values.model,
      maxSteps,
      onApproval,
      // A terminal waits with a prompt; no terminal denies at once: a run never hangs (SPEC §19).
      defaultOnApproval: io.terminal === undefined ? 'deny' : 'wait',
      ...(io.terminal === undefined
        ? {}
        : { approvalPrompt: terminalApprovalPrompt(io.terminal, io.stderr, style, io.env.USER) }),
      observers: [
        new ProgressReporter(io.stderr, style, { showReasoning: values['show-reasoning'] === true }),
        ...(values.events === 'jsonl' ? [eventLines(io)] : []),
      ],
      signal: io.signal,
      // A wait worth telling before the run starts: a llama-server loading its model, a busy workspace.
      onNotice: (message) => say(message, style.dim),
    })
    // Writes what the mirror still holds (bounded) and closes the control store, however the run went.
    .finally(() => fabric.close());
  if (values.json) {
    io.stdout.write(`${JSON.stringify(result)}\n`);
  } else if (result.payload && values.events === undefined) {
    io.stdout.write(formatPayload(result.payload));
  }
  io.stderr.write(style.dim(`runlog: ${result.runlog}\n`));
  return exitCodeForRun(result);
}

/** `--events jsonl`: each runlog event as one line on stdout, as it is recorded. */
function eventLines(io: CliIo): RunObserver {
  return {
    onEvent: (event) => io.stdout.write(`${JSON.stringify(event)}\n`),
    onText: () => {},
    onToolCallStarted: () => {},
  };
}

/** `--on-approval`: one of the modes of SPEC §19, or a usage error. */
export function onApprovalFlag(value: string | undefined): OnApproval | undefined {
  if (value === undefined) return undefined;
  if (!ON_APPROVAL.includes(value as OnApproval))
    throw new FabricError('usage', `--on-approval takes ${ON_APPROVAL.join(', ')}, not "${value}".`);
  return value as OnApproval;
}
