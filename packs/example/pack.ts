/**
 * An example custom pack: a units specialist. It is added by configuration alone:
 *
 *   specialists:
 *     units:
 *       builder: ./packs/example/pack.ts#buildPack
 *
 * A pack builder gets the specialist's config and returns a pack: a system prompt, tools and a
 * `finish_task` schema. Everything comes from `agent-fabric` (valibot too, as `v`), so the file
 * needs no package.json or node_modules of its own. Copy it to start your own, or run
 * `fabric init` (docs/packs.md).
 */
import { ToolError, createStaticPack, defineFinish, definePack, defineTool, v } from 'agent-fabric';

/** Metres per unit, for lengths. */
const LENGTHS: Readonly<Record<string, number>> = {
  mm: 0.001,
  cm: 0.01,
  m: 1,
  km: 1000,
  in: 0.0254,
  ft: 0.3048,
  mi: 1609.344,
};

const convert = defineTool({
  name: 'convert_units',
  description: `Converts a length between units (${Object.keys(LENGTHS).join(', ')}), or a temperature between c and f.`,
  input: v.object({
    value: v.pipe(v.number(), v.description('the number to convert')),
    from: v.pipe(v.string(), v.description('unit of the value')),
    to: v.pipe(v.string(), v.description('unit to convert to')),
  }),
  // It changes nothing: a resumed run may call it again (docs/packs.md, effect classes).
  effect: 'read',
  run: async ({ value, from, to }) => {
    const a = from.toLowerCase();
    const b = to.toLowerCase();
    if (a === 'c' && b === 'f') return `${value} c = ${round(value * 1.8 + 32)} f`;
    if (a === 'f' && b === 'c') return `${value} f = ${round((value - 32) / 1.8)} c`;
    const fromFactor = LENGTHS[a];
    const toFactor = LENGTHS[b];
    if (fromFactor === undefined || toFactor === undefined) {
      throw new ToolError(
        `Cannot convert ${from} to ${to}. Lengths: ${Object.keys(LENGTHS).join(', ')}; temperatures: c, f.`,
      );
    }
    return `${value} ${a} = ${round((value * fromFactor) / toFactor)} ${b}`;
  },
});

const finish = defineFinish(
  'Report the result. `summary` says what you did; `answer` is the converted value with its unit.',
  v.object({
    summary: v.pipe(v.string(), v.minLength(1)),
    answer: v.pipe(v.string(), v.minLength(1)),
  }),
);

/** Builds the units pack. */
export const buildPack = definePack((context) =>
  createStaticPack({
    name: context.specialist,
    systemPrompt:
      'You convert units. Use the convert_units tool for every conversion; never compute in your head. ' +
      'When you have the answer, call finish_task with a summary and the answer.',
    finish,
    tools: [convert],
  }),
);

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
