/**
 * The research pack (`builtin:research`, SPEC §4.2): `web_search` and `fetch_url`, a finish
 * schema of answer, findings and citations, and a finish gate that accepts only citations of
 * pages fetched in this run, with quotes found in them.
 */
import type {
  FinishGate,
  PackBuildContext,
  PackBuilder,
  SpecialistPack,
  Tool,
} from '../../../application/ports.ts';
import { DnsHostResolver } from '../../net/dns-resolver.ts';
import { nodePinnedRequester } from '../../net/pinned-request.ts';
import type { PinnedRequester } from '../../net/safe-fetch.ts';
import type { HostResolver } from '../../net/ssrf-guard.ts';
import { validateWith } from '../../../config/schema-tools.ts';
import { checkCitations } from './citation-gate.ts';
import { FetchLedger } from './fetch-ledger.ts';
import { createFetchUrlTool } from './fetch-url-tool.ts';
import { researchFinish, ResearchFinishSchema } from './research-finish.ts';
import { parseResearchOptions } from './research-options.ts';
import type { SearchProvider } from './search-provider.ts';
import { SearxngSearchProvider } from './searxng-provider.ts';
import { loadResearchPrompt } from './system-prompt.ts';
import { createWebSearchTool } from './web-search-tool.ts';

/** Adapters the pack uses; the defaults are the system resolver, node:http(s) and SearXNG. */
export interface ResearchPackDeps {
  readonly resolver?: HostResolver;
  readonly requester?: PinnedRequester;
  /** Replaces the SearXNG provider (another search API, or a scripted one in tests). */
  readonly searchProvider?: SearchProvider;
}

/** A research pack: a `SpecialistPack` with a citation finish gate. */
export type ResearchPack = SpecialistPack & FinishGate;

/** Builds a research pack with the given adapters. Per-run state (the fetched pages) lives in it. */
export async function createResearchPack(
  context: PackBuildContext,
  deps: ResearchPackDeps = {},
): Promise<ResearchPack> {
  const options = parseResearchOptions(context.specialist, context.config.options);
  const networkAllowed = context.config.network_allowed;
  const searxngUrl = options.searxng_url ?? context.settings.searxngUrl;
  const provider =
    deps.searchProvider ??
    (searxngUrl === undefined
      ? undefined
      : new SearxngSearchProvider({ baseUrl: searxngUrl, timeoutMs: options.search_timeout_ms }));
  const ledger = new FetchLedger();
  // Fixed at build time and frozen: nothing a fetched page says can add or swap a tool.
  const tools: readonly Tool[] = Object.freeze([
    createWebSearchTool({ networkAllowed, provider, maxResults: options.max_results }),
    createFetchUrlTool({
      networkAllowed,
      policy: { allowedHosts: context.config.allowed_hosts },
      resolver: deps.resolver ?? new DnsHostResolver(),
      requester: deps.requester ?? nodePinnedRequester,
      ledger,
      maxBytes: options.max_fetch_bytes,
      timeoutMs: options.fetch_timeout_ms,
      maxRedirects: options.max_redirects,
      maxPageChars: options.max_page_chars,
    }),
  ]);
  const systemPrompt = await loadResearchPrompt();
  return {
    name: 'research',
    systemPrompt,
    finish: researchFinish,
    open: async () => {},
    tools: () => tools,
    close: async () => {},
    async checkFinish(payload) {
      const parsed = validateWith(ResearchFinishSchema, payload);
      if (!parsed.ok) return { ok: false, message: `finish_task arguments are invalid: ${parsed.message}` };
      return checkCitations(parsed.value.citations, ledger, options.min_quote_words);
    },
  };
}

/** `builtin:research`: a fresh research pack per `getPack`. */
export const buildResearchPack: PackBuilder = (context) => createResearchPack(context);
