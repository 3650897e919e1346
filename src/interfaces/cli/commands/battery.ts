import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  profileText,
  renderReport,
  scoresLine,
  windowsText,
} from '../../../application/battery/battery-report.ts';
import { callsText } from '../../../application/battery/model-facts.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { openBattery } from '../../../composition/battery.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { BatteryProgress } from '../battery-progress.ts';
import { batteryReportHtml } from '../../http/viewer/battery-report-page.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { styleFor } from '../style.ts';
import { plural } from '../../../domain/words.ts';

export const BATTERY_HELP = `Usage: fabric battery FILE [options]
       fabric battery --resume ID [FILE] [options]

Runs a battery: the same tasks with several models, side by side, each cell (task × model ×
repeat) an ordinary run in its own fresh copy of the workspace, then checked the same way —
the run's status, commands run in the sandbox (e.g. cargo test), and file contents. Shows a
matrix on stderr (a row per task, a column per model) that fills in as cells end.

FILE is YAML (paths in it are relative to it):

  name: compositor-basics
  specialist: rust
  workspace: ./compositor            # each cell gets a fresh copy; the original is never touched
  models: [qwen/qwen3-coder-30b, mistralai/devstral-small-2507]   # or: available
  repeat: 1
  tasks:
    - id: region-contains
      task: "Add Region::contains_point(x, y) and a unit test for it"
      expect:
        status: succeeded               # the default
        commands: [cargo test]          # must pass afterwards; must be in the sandbox allowlist
        files_contain: { src/region.rs: "fn contains_point" }
        tool_used: edit_file            # a tool (or list) the run must call; tool_not_used: one it must not
        max_steps: 12                   # also max_seconds and max_tokens (prompt and completion)

Options:
      --models A,B        the models to compare (ids or llm.models aliases), or \`available\`:
                          every tool-capable model the backends have. Replaces the file's list.
      --concurrency N     cells at once (default: one per LM Studio server). A cell counts from
                          its run's start to the end of its checks. Each model's requests go to
                          a server that has it loaded, else one that lists it. Cells run model
                          after model, so each server loads each model once.
      --resume ID         run only the cells of battery ID not done yet (after Ctrl-C), or
                          failed by their infrastructure (a server down, a model missing or
                          not loading: tried 3 times, never counted against the model);
                          the id is printed as a battery starts
      --json              print the result as one JSON object on stdout; per model with
                          pass@1, pass^k (tasks passed on every repeat), flip rate (tasks
                          whose outcome differs between repeats) and a 95% Wilson interval
      --report FILE.md    write a Markdown report: the matrix, per-model pass rate, median
                          steps, tokens and time, and each failure's check and message;
                          FILE.html: the same as one self-contained page (no network)
  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
  -h, --help              show this help

The battery's state is kept in <runs_dir>/batteries/<id>.json after every cell.
A model without tool support fails its cells with the reason; a server down, or a model gone
from it, fails them as infrastructure failures (⚠, not counted); the battery goes on. A model
no answering server lists is refused before any cell runs.

Exit codes: 0 the battery went through (whatever it scored) · 2 invalid file (unknown
            specialist, bad YAML, duplicate task ids, a check command the sandbox would refuse,
            a missing workspace: nothing runs) · 4 no model at all (\`available\` found none),
            or a model no answering server lists (nothing runs)
            · 130 interrupted (Ctrl-C; resume with --resume ID)
`;

/** `fabric battery`. */
export async function batteryCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('battery', argv, {
    models: { type: 'string' },
    concurrency: { type: 'string' },
    resume: { type: 'string' },
    json: { type: 'boolean' },
    report: { type: 'string' },
    config: { type: 'string', short: 'c' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(BATTERY_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 1) {
    throw new FabricError(
      'usage',
      `fabric battery takes one FILE, not ${positionals.length}. See \`fabric battery --help\`.`,
    );
  }
  const [file] = positionals;
  if (file === undefined && values.resume === undefined) {
    io.stderr.write(`fabric battery needs a FILE (or --resume ID).\n\n${BATTERY_HELP}`);
    return EXIT.usage;
  }
  const concurrency = positiveInt('--concurrency', values.concurrency);
  const models = parseModels(values.models);
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const fabric = createFabric(config);
  const style = styleFor(io.stderr, io.env);
  try {
    const session = await openBattery(fabric, {
      file: file === undefined ? undefined : resolve(io.cwd, file),
      resume: values.resume,
      models,
      concurrency,
      signal: io.signal,
    });
    const { plan } = session;
    const pending = session.pending().length;
    io.stderr.write(
      `${style.bold('fabric')} battery ${plan.id} · ${plan.name} · ${plural(plan.tasks.length, 'task')} × ${plural(plan.models.length, 'model')} × ${plan.repeat} · ${plural(pending, 'cell')} to run, ${session.concurrency} at once\n`,
    );
    io.stderr.write(style.dim(`  resume after Ctrl-C: fabric battery --resume ${plan.id}\n`));
    const progress = new BatteryProgress(io.stderr, style, plan, session.cells());
    progress.start();
    const notices: string[] = [];
    const outcome = await session.run(io.signal, {
      onCellStart: (cell) => progress.onCellStart(cell),
      onCellEnd: (result) => progress.onCellEnd(result),
      onNotice: (message) => notices.push(message),
    });
    progress.finish();
    for (const notice of notices) io.stderr.write(style.dim(`  ${notice}\n`));
    const summary = session.summary();
    if (values.report !== undefined) {
      const path = resolve(io.cwd, values.report);
      const record = {
        plan,
        status: session.status,
        cells: session.cells(),
        started: new Set<string>(),
        updatedAt: null,
        live: false,
      };
      await writeFile(
        path,
        /\.html?$/i.test(path) ? batteryReportHtml(record, summary) : renderReport(plan, summary),
      );
      io.stderr.write(style.dim(`report: ${path}\n`));
    }
    if (values.json) io.stdout.write(`${JSON.stringify(summary)}\n`);
    else {
      for (const model of summary.models) {
        io.stdout.write(
          `${model.model}: ${model.passed}/${model.total} passed · ${scoresLine(model, plan.repeat)} · median ${model.median_steps ?? '–'} steps, ${model.median_seconds ?? '–'} s · ${plural(model.tokens, 'token')}${model.infrastructure_failures > 0 ? ` · ${plural(model.infrastructure_failures, 'infrastructure failure')} (not counted; --resume runs them again)` : ''}\n`,
        );
        io.stdout.write(
          `  profile ${profileText(model)} · window ${windowsText(model)} · tool calls ${callsText(model)} · ${plural(model.reasoning_tokens, 'reasoning token')} · ${plural(model.empty_turns, 'empty turn')}\n`,
        );
      }
    }
    io.stderr.write(style.dim(`state: ${session.statePath}\n`));
    if (outcome.interrupted) {
      io.stderr.write(style.yellow(`Interrupted. Resume with: fabric battery --resume ${plan.id}\n`));
      return EXIT.cancelled;
    }
    return EXIT.ok;
  } finally {
    await fabric.close();
  }
}

function parseModels(flag: string | undefined): readonly string[] | 'available' | undefined {
  if (flag === undefined) return undefined;
  if (flag.trim() === 'available') return 'available';
  const models = flag
    .split(',')
    .map((model) => model.trim())
    .filter((model) => model !== '');
  if (models.length === 0)
    throw new FabricError('usage', '--models takes model ids separated by commas, or `available`.');
  return models;
}
