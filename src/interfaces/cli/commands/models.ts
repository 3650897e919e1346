import { type BackendProbe, type CatalogModel, isHosted } from '../../../application/ports.ts';
import type { ModelChoice } from '../../../application/models/resolve-model.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { backendModelsView, profileView } from '../../../application/models/backend-views.ts';
import type { ModelProfile } from '../../../config/schema.ts';
import { Fabric } from '../../../composition/fabric.ts';
import { modelCardStore } from '../../../composition/model-cards.ts';
import { type ModelCard, cardFor, cardSummary, staleness } from '../../../application/models/model-card.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { styleFor } from '../style.ts';
import { plural } from '../../../domain/words.ts';

export const MODELS_HELP = `Usage: fabric models [options]
       fabric models probe [MODEL…] [--json] [--report DIR]   measure models, keep their cards
       fabric models show MODEL                               print a model's card

Asks every configured backend (each LM Studio server, Ollama) what it has and lists every model:
type, tool support, loaded state, context length (loaded / trained) and size. Marks the model a
run would use, and says why: the configured model if a backend has it; else never an embedding
model or one known to lack tools; with model cards (\`fabric models probe\`) the measured best,
never one measured unable to call tools; else tool-capable, then loaded, then smallest first.
The card column shows how each probed model calls tools, the probes it passed, and when.

Options:
  -s, --specialist NAME   choose as this specialist would (its configured model first)
  -m, --model ID          check that a model (an id or an alias from llm.models) is available
  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json              print { backends, chosen, error } as one JSON object on stdout
  -h, --help              show this help

Exit codes: 0 a model would be chosen · 2 usage or config error · 4 no usable model or backend

Example:
  LM_STUDIO_URL=http://gpu-box:1234 fabric models --specialist rust
`;

/** `fabric models`. */
export async function modelsCommand(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv[0] === 'probe') return (await import('./models-probe.ts')).modelsProbeCommand(argv.slice(1), io);
  if (argv[0] === 'show') return (await import('./models-show.ts')).modelsShowCommand(argv.slice(1), io);
  const { values } = parseCommandArgs('models', argv, {
    specialist: { type: 'string', short: 's' },
    model: { type: 'string', short: 'm' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(MODELS_HELP);
    return EXIT.ok;
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  // One-shot: the cards come from the runs directory and a Postgres control plane, if configured.
  const fabric = new Fabric(config, {
    lifetime: 'one_shot',
    onDegraded: (message) => io.stderr.write(`${message}\n`),
  });
  const [probes, cards] = await Promise.all([
    fabric.catalog.probe(io.signal),
    modelCardStore(fabric)
      .list()
      .finally(() => fabric.close()),
  ]);
  let choice: ModelChoice | undefined;
  let failure: FabricError | undefined;
  try {
    choice = fabric.chooseModelFrom(probes, values.specialist, values.model, cards);
  } catch (error) {
    // No server answered, or none has a usable model: both are shown with what each backend said.
    if (
      !(error instanceof FabricError) ||
      (error.code !== 'model_not_found' && error.code !== 'backend_unavailable')
    )
      throw error;
    failure = error;
  }
  if (values.json) {
    io.stdout.write(`${JSON.stringify(modelsJson(probes, choice, failure, config.profiles, cards))}\n`);
  } else {
    writeText(io, probes, choice, failure, config.profiles, cards);
  }
  return choice === undefined ? EXIT.noModel : EXIT.ok;
}

function isChosen(model: CatalogModel, choice: ModelChoice | undefined): boolean {
  return choice !== undefined && choice.model.id === model.id && choice.model.baseUrl === model.baseUrl;
}

function modelsJson(
  probes: readonly BackendProbe[],
  choice: ModelChoice | undefined,
  failure: FabricError | undefined,
  profiles: Readonly<Record<string, ModelProfile>>,
  cards: readonly ModelCard[],
) {
  return {
    backends: probes.map((probe) =>
      backendModelsView(probe, (model) => isChosen(model, choice), profiles, cards),
    ),
    chosen:
      choice === undefined
        ? null
        : {
            id: choice.model.id,
            backend: choice.model.backend,
            base_url: choice.model.baseUrl,
            reason: choice.reason,
          },
    error: failure === undefined ? null : { code: failure.code, message: failure.message },
  };
}

function writeText(
  io: CliIo,
  probes: readonly BackendProbe[],
  choice: ModelChoice | undefined,
  failure: FabricError | undefined,
  profiles: Readonly<Record<string, ModelProfile>>,
  cards: readonly ModelCard[],
): void {
  const style = styleFor(io.stdout, io.env);
  for (const probe of probes) {
    const head = `${probe.backend}${probe.name === undefined || probe.name === probe.backend ? '' : ` ${probe.name}`} ${probe.baseUrl}${isHosted(probe.backend) ? ' (hosted: used only when named)' : ''}`;
    if (!probe.ok) {
      io.stdout.write(`${style.bold(head)}  ${style.red('down')}: ${probe.error ?? 'no answer'}\n\n`);
      continue;
    }
    io.stdout.write(
      `${style.bold(head)}  ${style.green('up')} (${probe.latencyMs} ms, ${plural(probe.models.length, 'model')})\n`,
    );
    const width = Math.max(0, ...probe.models.map((model) => model.id.length));
    for (const model of probe.models) {
      const mark = isChosen(model, choice) ? style.green('*') : ' ';
      io.stdout.write(
        `  ${mark} ${model.id.padEnd(width)}  ${describe(model)}  ${cardColumn(cardFor(cards, model), model)}  ${profileLine(model, profiles)}\n`,
      );
    }
    io.stdout.write('\n');
  }
  if (choice !== undefined) {
    io.stdout.write(
      `${style.bold('Would use')} ${choice.model.id} on ${choice.model.backend} ${choice.model.baseUrl}\n`,
    );
    io.stdout.write(style.dim(`  why: ${choice.reason}\n`));
    const profile = profileView(choice.model, profiles);
    io.stdout.write(
      style.dim(
        `  profile: ${profile.matched.length === 0 ? 'none (the server decides)' : profile.matched.join(' over ')}${
          profile.source === null ? '' : ` (${profile.source})`
        }\n`,
      ),
    );
  } else if (failure !== undefined) {
    io.stdout.write(`${style.red('No model would be chosen.')} ${failure.message}\n`);
  }
}

/** The card column: how the model calls tools, probes passed, and when, or `card -` (never probed); `(stale)` when the model changed since. */
function cardColumn(card: ModelCard | undefined, model: CatalogModel): string {
  if (card === undefined) return 'card -';
  return `card ${cardSummary(card)}${staleness(card, model) === null ? '' : ' (stale)'}`;
}

function describe(model: CatalogModel): string {
  const tools = model.toolUse === true ? 'tools' : model.toolUse === false ? 'no tools' : 'tools ?';
  const loaded = model.loaded === true ? 'loaded' : model.loaded === false ? 'not loaded' : 'load ?';
  const ctx = `ctx ${model.contextLength ?? '?'}/${model.maxContextLength ?? '?'}`;
  const size = model.paramsB === undefined ? 'size ?' : `${Number(model.paramsB.toPrecision(3))}B`;
  return [model.type.padEnd(9), tools.padEnd(8), loaded.padEnd(10), ctx, size].join('  ');
}

/** The profile a run of this model would use, in a few words: sampler, think sent. */
function profileLine(model: CatalogModel, profiles: Readonly<Record<string, ModelProfile>>): string {
  const view = profileView(model, profiles);
  if (view.matched.length === 0) return 'profile -';
  const { temperature, top_p, top_k } = view.settings;
  const sampler = [
    temperature === undefined ? '' : `t ${temperature}`,
    top_p === undefined ? '' : `top_p ${top_p}`,
    top_k === undefined ? '' : `top_k ${top_k}`,
  ].filter(Boolean);
  const think =
    view.think_sent === null ? (model.thinking === true ? 'think -' : '') : `think ${view.think_sent}`;
  return `profile ${view.matched[0]}${sampler.length === 0 && think === '' ? '' : ` (${[...sampler, think].filter(Boolean).join(', ')})`}`;
}
