import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../../config/load.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { MAX_STEER_TEXT, type SteerRequest, steerRun } from '../../../application/run/steer-run.ts';
import { FabricError } from '../../../domain/errors.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

const COMMON = `  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json              print what was accepted as one JSON object on stdout
  -h, --help              show this help`;

const FOUND = `The run is found through the runs directory of the config (no address to type): its owner
(\`fabric serve\` on any port, a worker, a plain \`fabric run\`) reads the run's inbox between
steps. Refused: a run that has ended (run_finished), one whose process stopped (run_not_live;
\`fabric resume RUN\` first), a stale --expected-step (steer_stale_step).`;

export const STEER_HELP = `Usage: fabric steer RUN "TEXT" [--interrupt] [--expected-step N] [--json]

Tells a running run something: TEXT (at most 100,000 characters) is added as a user message
after the step running now, at the end of the conversation (the earlier messages, and the
server's prompt cache, stay as they were). With --interrupt, the model turn in progress (or the
command running: it is killed with every process it started, the calls after it are not run) is
cut first and the message is the next thing the model reads. RUN is a run id or a unique prefix
of one.

${FOUND}

Options:
      --interrupt         cut the current model turn, or stop the running command, first
      --expected-step N   refuse unless the run is still at step N (fabric runs show RUN)
${COMMON}

Exit codes: 0 accepted · 2 refused or usage error

Example:
  fabric steer 20260101T120000Z-3f2a "the bug is in damage.rs"
`;

export const PAUSE_HELP = `Usage: fabric pause RUN [--json]

Holds a running run after the step running now: no model request is sent (its model slot is free
for other runs) until \`fabric unpause RUN\` (or POST /v1/runs/RUN/resume). Ctrl-C or cancel still
end it.

${FOUND}

Options:
${COMMON}
`;

export const UNPAUSE_HELP = `Usage: fabric unpause RUN [--json]

Lets a run held by \`fabric pause\` go on. (A run whose process stopped is resumed with
\`fabric resume RUN\` instead.)

${FOUND}

Options:
${COMMON}
`;

/** `fabric steer`. */
export function steerCommand(argv: readonly string[], io: CliIo): Promise<number> {
  return send('steer', STEER_HELP, argv, io);
}

/** `fabric pause`. */
export function pauseCommand(argv: readonly string[], io: CliIo): Promise<number> {
  return send('pause', PAUSE_HELP, argv, io);
}

/** `fabric unpause`. */
export function unpauseCommand(argv: readonly string[], io: CliIo): Promise<number> {
  return send('unpause', UNPAUSE_HELP, argv, io);
}

async function send(
  verb: 'steer' | 'pause' | 'unpause',
  help: string,
  argv: readonly string[],
  io: CliIo,
): Promise<number> {
  const { values, positionals } = parseCommandArgs(verb, argv, {
    interrupt: { type: 'boolean' },
    'expected-step': { type: 'string' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(help);
    return EXIT.ok;
  }
  const wanted = verb === 'steer' ? 2 : 1;
  const [run, text] = positionals;
  if (
    run === undefined ||
    positionals.length !== wanted ||
    (verb === 'steer' && (text ?? '').trim() === '')
  ) {
    io.stderr.write(
      `fabric ${verb} needs ${verb === 'steer' ? 'a RUN and the TEXT to tell it (quote it)' : 'one RUN'} (a run id; \`fabric runs\` lists them).\n\n${help}`,
    );
    return EXIT.usage;
  }
  if (verb !== 'steer' && (values.interrupt || values['expected-step'] !== undefined))
    throw new FabricError(
      'usage',
      `--interrupt and --expected-step belong to fabric steer, not fabric ${verb}.`,
    );
  const message = (text ?? '').trim();
  if (message.length > MAX_STEER_TEXT)
    throw new FabricError(
      'usage',
      `The message is ${message.length} characters; a steer message holds at most ${MAX_STEER_TEXT} (as over HTTP). Point the run at a file in its workspace instead of pasting it.`,
    );
  const expected = values['expected-step'];
  const step = expected === undefined ? undefined : Number(expected);
  if (step !== undefined && (!Number.isInteger(step) || step < 0))
    throw new FabricError('usage', `--expected-step takes a step number (0 or more), not "${expected}".`);
  const request: SteerRequest =
    verb === 'steer'
      ? {
          kind: 'message',
          text: message,
          mode: values.interrupt ? 'interrupt' : 'steer',
          channel: 'cli',
          ...(step === undefined ? {} : { expectedStep: step }),
        }
      : { kind: verb, channel: 'cli' };
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const fabric = createFabric(config, { lifetime: 'one_shot' });
  try {
    const runs = fabric.runReadModel({ control: 'never' });
    const accepted = await steerRun(
      {
        show: (id) => runs.show(id),
        inboxes: fabric.runInboxes,
        approvals: fabric.approvals,
        newId: () => randomUUID(),
      },
      run,
      request,
    );
    if (values.json) io.stdout.write(`${JSON.stringify({ ...accepted, verb })}\n`);
    else
      io.stdout.write(
        verb === 'steer'
          ? `Message ${accepted.id} for run ${accepted.run_id}: it lands after step ${accepted.after_step}.\n`
          : verb === 'pause'
            ? `Run ${accepted.run_id} pauses after step ${accepted.after_step}; \`fabric unpause ${accepted.run_id}\` lets it go on.\n`
            : `Run ${accepted.run_id} goes on.\n`,
      );
    return EXIT.ok;
  } finally {
    await fabric.close();
  }
}
