/** The research pack's `finish_task` output format: an answer, findings, and quoted citations. */
import * as v from 'valibot';
import { defineFinish } from '../define-tool.ts';

/** One citation: a page fetched in this run and an exact quote from it. */
export const CitationSchema = v.object({
  url: v.pipe(v.string(), v.minLength(1), v.description('URL of a page fetched with fetch_url in this run')),
  title: v.pipe(v.string(), v.description('title of that page')),
  quote: v.pipe(
    v.string(),
    v.minLength(1),
    v.description('a passage copied word for word from that page, at least a few words long'),
  ),
});

/** The payload a research run ends with. */
export const ResearchFinishSchema = v.object({
  answer: v.pipe(v.string(), v.minLength(1), v.description('the answer to the question, in prose')),
  findings: v.optional(v.pipe(v.array(v.string()), v.description('key facts found, one per item')), []),
  citations: v.optional(
    v.pipe(v.array(CitationSchema), v.description('the sources that support the answer')),
    [],
  ),
});

/** `finish_task` for the research pack. */
export const researchFinish = defineFinish(
  'End the research: give the answer, the key findings, and citations of pages you fetched, each with an exact quote.',
  ResearchFinishSchema,
);
