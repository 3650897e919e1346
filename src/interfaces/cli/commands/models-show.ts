import { type ModelCard, cardFor, cardSummary, staleness } from '../../../application/models/model-card.ts';
import type { BackendProbe } from '../../../application/ports.ts';
import { sameModel } from '../../../application/models/resolve-model.ts';
import { Fabric } from '../../../composition/fabric.ts';
import { modelCardStore } from '../../../composition/model-cards.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { styleFor } from '../style.ts';

export const MODELS_SHOW_HELP = `Usage: fabric models show MODEL [options]

Prints the model card of MODEL (an id or an alias from llm.models) on each server it was probed
on: when, each probe's outcome and figures, and the battery pass rates per specialist. A card
whose model changed on its server since (a new model file, quantisation or server version) is
marked stale: \`fabric models probe MODEL\` measures it again.

Options:
      --json              print { cards } as one JSON object on stdout (each with \`stale\`: why, or null)
  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
  -h, --help              show this help

Exit codes: 0 shown · 2 usage or config error · 4 no card for MODEL (run \`fabric models probe MODEL\`)
`;

/** `fabric models show MODEL`. */
export async function modelsShowCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('models show', argv, {
    json: { type: 'boolean' },
    config: { type: 'string', short: 'c' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(MODELS_SHOW_HELP);
    return EXIT.ok;
  }
  const [name, ...extra] = positionals;
  if (name === undefined || extra.length > 0) {
    throw new FabricError('usage', 'fabric models show takes one MODEL, e.g. `fabric models show qwen3:8b`.');
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  // One-shot: the cards come from the runs directory and a Postgres control plane, if configured.
  const fabric = new Fabric(config, {
    lifetime: 'one_shot',
    onDegraded: (message) => io.stderr.write(`${message}\n`),
  });
  const id = fabric.expandModelAlias(name);
  const [cards, probes] = await Promise.all([
    modelCardStore(fabric)
      .list()
      .finally(() => fabric.close()),
    fabric.catalog.probe(io.signal),
  ]);
  const staleOf = (card: ModelCard) => staleness(card, listedNow(probes, card));
  const mine = cards.filter((card) => sameModel(card.model, id));
  if (mine.length === 0) {
    throw new FabricError(
      'model_not_found',
      `No model card for "${name}": it was never probed here. \`fabric models probe ${name}\` measures it.`,
    );
  }
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({ cards: mine.map((card) => ({ ...card, stale: staleOf(card) })) })}\n`,
    );
    return EXIT.ok;
  }
  for (const card of mine) writeCard(io, card, staleOf(card));
  return EXIT.ok;
}

/** The model as its server lists it now, when the server answered. */
function listedNow(probes: readonly BackendProbe[], card: ModelCard) {
  const models = probes.filter((probe) => probe.ok).flatMap((probe) => probe.models);
  return models.find((model) => cardFor([card], model) !== undefined);
}

function writeCard(io: CliIo, card: ModelCard, stale: string | null): void {
  const style = styleFor(io.stdout, io.env);
  io.stdout.write(`${style.bold(card.model)} on ${card.backend} ${card.baseUrl}\n`);
  if (stale !== null)
    io.stdout.write(
      `  ${style.yellow(`${stale}`)}; \`fabric models probe ${card.model}\` measures it again\n`,
    );
  io.stdout.write(`  probed ${card.probedAt}  ${cardSummary(card)}  score ${card.score}\n`);
  io.stdout.write(
    `  tool calls: ${card.tools}${card.dialect === null ? '' : ` (text dialect ${card.dialect})`}  tokens ${card.tokens.prompt} read, ${card.tokens.completion} generated\n`,
  );
  if (card.serverVersion !== null || card.quantisation !== null)
    io.stdout.write(`  server ${card.serverVersion ?? '?'}  quantisation ${card.quantisation ?? '?'}\n`);
  for (const probe of card.probes) {
    const figures = Object.entries(probe.figures)
      .map(([key, value]) => `${key} ${value}`)
      .join(', ');
    io.stdout.write(
      `  ${probe.outcome.padEnd(7)} ${probe.id.padEnd(14)} ${probe.detail}${figures === '' ? '' : style.dim(`  [${figures}]`)}\n`,
    );
  }
  const battery = Object.entries(card.battery);
  for (const [specialist, mark] of battery)
    io.stdout.write(
      `  battery ${specialist}: pass rate ${mark.passRate === null ? 'n/a' : mark.passRate} over ${mark.runs} runs (${mark.at.slice(0, 10)})\n`,
    );
  io.stdout.write('\n');
}
