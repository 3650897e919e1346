/** The research pack's settings, from the specialist's `options` in fabric.yaml. */
import * as v from 'valibot';
import { FabricError } from '../../../domain/errors.ts';

const positiveInt = v.pipe(v.number(), v.integer(), v.minValue(1));

/** `specialists.<name>.options` for a `builtin:research` specialist; every key optional. */
export const ResearchOptionsSchema = v.strictObject({
  /** Overrides SEARXNG_URL / search.searxng_url for this specialist. */
  searxng_url: v.optional(v.pipe(v.string(), v.url())),
  max_results: v.optional(v.pipe(positiveInt, v.maxValue(50)), 8),
  search_timeout_ms: v.optional(positiveInt, 15_000),
  fetch_timeout_ms: v.optional(positiveInt, 20_000),
  max_fetch_bytes: v.optional(positiveInt, 2 * 1024 * 1024),
  max_redirects: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10)), 5),
  /** How much page text one fetch_url result shows the model. */
  max_page_chars: v.optional(positiveInt, 24_000),
  min_quote_words: v.optional(positiveInt, 4),
});

/** Parsed research options. */
export type ResearchOptions = v.InferOutput<typeof ResearchOptionsSchema>;

/** Parses the options, or throws `config_invalid` naming the specialist and the bad key. */
export function parseResearchOptions(
  specialist: string,
  options: Readonly<Record<string, unknown>>,
): ResearchOptions {
  const result = v.safeParse(ResearchOptionsSchema, options);
  if (result.success) return result.output;
  const problems = result.issues.map((issue) => {
    const path = v.getDotPath(issue) ?? '';
    return `specialists.${specialist}.options${path ? `.${path}` : ''}: ${issue.message}`;
  });
  throw new FabricError('config_invalid', `Invalid research pack options. ${problems.join('; ')}`);
}
