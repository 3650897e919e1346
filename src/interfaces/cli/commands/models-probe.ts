import { cardSummary, type ModelCard } from '../../../application/models/model-card.ts';
import { DEFAULT_PROBE_LIMITS, type ProbeLimits } from '../../../application/models/probe-suite.ts';
import { Fabric } from '../../../composition/fabric.ts';
import { probeFabricModels, writeModelReport } from '../../../composition/model-cards.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { styleFor } from '../style.ts';

export const MODELS_PROBE_HELP = `Usage: fabric models probe [MODEL…] [options]

Measures what each model can do on this machine (SPEC §20) and keeps the result as its model card
(under the runs directory; \`fabric models show MODEL\` prints it). Without MODEL, probes every
local chat model the servers list, one at a time. Seven probes per model, about 1,000 generated
tokens and a few seconds on a local GPU: a native tool call, a second call that uses the first
one's result, finish_task with its schema, JSON arguments, the text dialect when native calls
fail, reasoning (and whether think: off is honoured), a request near the loaded window's end.
A probe that gets no answer within --timeout is reported as such and the model's other probes
are skipped.

Options:
      --json              print the cards as one JSON object { cards } on stdout
      --report DIR        also write the cards and every raw exchange (keys scrubbed) to DIR,
                          a new or empty folder, to attach to a bug report
      --timeout S         the most one probe may take, in seconds (default ${DEFAULT_PROBE_LIMITS.probeTimeoutMs / 1000})
      --max-tokens N      the most tokens one answer may generate (default ${DEFAULT_PROBE_LIMITS.maxOutputTokens})
  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
  -h, --help              show this help

Exit codes: 0 probed · 2 usage or config error · 4 no such model or no server

Example:
  fabric models probe qwen3-coder-30b --report ./probe-report
`;

/** `fabric models probe`. */
export async function modelsProbeCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('models probe', argv, {
    json: { type: 'boolean' },
    report: { type: 'string' },
    timeout: { type: 'string' },
    'max-tokens': { type: 'string' },
    config: { type: 'string', short: 'c' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(MODELS_PROBE_HELP);
    return EXIT.ok;
  }
  const limits: ProbeLimits = {
    ...DEFAULT_PROBE_LIMITS,
    probeTimeoutMs: positive('--timeout', values.timeout, DEFAULT_PROBE_LIMITS.probeTimeoutMs / 1000) * 1000,
    maxOutputTokens: positive('--max-tokens', values['max-tokens'], DEFAULT_PROBE_LIMITS.maxOutputTokens),
  };
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  // Cards go to the runs directory and to the control plane (Postgres, or the embedded database
  // unless another process holds it).
  const fabric = new Fabric(config, { onDegraded: (message) => io.stderr.write(`${message}\n`) });
  try {
    return await probeAndReport(fabric, positionals, values, limits, io);
  } finally {
    await fabric.close();
  }
}

async function probeAndReport(
  fabric: Fabric,
  positionals: readonly string[],
  values: { readonly json?: boolean | undefined; readonly report?: string | undefined },
  limits: ProbeLimits,
  io: CliIo,
): Promise<number> {
  const names = positionals.map((name) => fabric.expandModelAlias(name));
  const style = styleFor(io.stderr, io.env);
  const cards = await probeFabricModels(fabric, {
    names,
    limits,
    signal: io.signal,
    onModel: (model, index, total) =>
      io.stderr.write(
        `${style.bold(`probing ${model.id}`)} on ${model.backend} ${model.baseUrl} (${index + 1}/${total})\n`,
      ),
    onProgress: ({ probe, result }) => {
      if (result === undefined) return;
      io.stderr.write(`  ${mark(result.outcome, style)} ${probe.padEnd(14)} ${style.dim(result.detail)}\n`);
    },
  });
  if (values.report !== undefined) {
    const written = await writeModelReport(fabric, values.report, cards);
    io.stderr.write(`report written to ${written}\n`);
  }
  if (values.json) io.stdout.write(`${JSON.stringify({ cards })}\n`);
  else for (const card of cards) io.stdout.write(cardLine(card));
  return EXIT.ok;
}

function cardLine(card: ModelCard): string {
  return `${card.model}  ${card.backend} ${card.baseUrl}  ${cardSummary(card)}  score ${card.score}  tokens ${card.tokens.prompt}+${card.tokens.completion}\n`;
}

function mark(outcome: string, style: ReturnType<typeof styleFor>): string {
  if (outcome === 'pass') return style.green('pass   ');
  if (outcome === 'skipped') return style.dim('skipped');
  return style.red(outcome.padEnd(7));
}

function positive(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new FabricError('usage', `${flag} ${text}: expected a positive number, e.g. ${flag} ${fallback}.`);
  }
  return value;
}
