/**
 * A pack whose tool schema is written as MCP servers often write theirs: a `$ref` into `$defs`,
 * a `pattern` and a `format` (research/local-model-quirks-2.md Q2, Q22). Its tool checks the
 * arguments itself, so a period that arrives as text is refused as the real tool would.
 */
import { createStaticPack, defineFinish, definePack, v } from 'agent-fabric';

const book = {
  spec: {
    name: 'book_period',
    description: 'Books a reporting period.',
    parameters: {
      type: 'object',
      $defs: {
        Period: {
          type: 'object',
          properties: { kind: { type: 'string', pattern: '^(day|week)$' } },
          required: ['kind'],
        },
      },
      properties: {
        period: { $ref: '#/$defs/Period', description: 'the period to book' },
        email: { type: 'string', format: 'email' },
      },
      required: ['period'],
    },
  },
  validate: (args: unknown) => {
    const period = (args as { period?: unknown }).period;
    return typeof period === 'object' && period !== null && 'kind' in period
      ? { ok: true as const, value: args }
      : {
          ok: false as const,
          message: `period must be an object like {"kind": "week"}, not ${JSON.stringify(period)}`,
        };
  },
  run: async (args: unknown) => `booked a ${(args as { period: { kind: string } }).period.kind}`,
};

export const buildPack = definePack((context) =>
  createStaticPack({
    name: context.specialist,
    systemPrompt: 'You book periods with book_period, then call finish_task.',
    finish: defineFinish('Report what was booked.', v.object({ summary: v.string() })),
    tools: [book],
  }),
);
