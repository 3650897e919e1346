/**
 * A run's trace, built from its events alone (SPEC §21): `invoke_agent {specialist}` for the run,
 * `chat {model}` per model request and `execute_tool {tool}` per call beneath it, and what the
 * loop did on the way (compaction, stuck, rejected finishes) as span events. The same events give
 * the same spans, ids included, so a live export and a later `fabric otel export` agree.
 */
import type { RunEvent } from '../../domain/run-events.ts';
import { backendKindOf } from '../ports.ts';
import { ERROR_TYPE, GEN_AI, PROVIDER_NAMES, SERVER_ADDRESS, SERVER_PORT } from './genai-attributes.ts';
import { spanIdOf, traceIdOf } from './span-ids.ts';
import type { SpanAttributes, SpanRecord } from './span-record.ts';

type Event<K extends RunEvent['kind']> = Extract<RunEvent, { kind: K }>;
type SpanEvent = SpanRecord['events'][number];

export interface RunSpanOptions {
  /** Messages, tool arguments and results on the spans: only when asked for. */
  readonly captureContent: boolean;
}

/** Events that become span events on the run's span, under these names. */
const RUN_SPAN_EVENTS: Partial<Record<RunEvent['kind'], string>> = {
  compaction: 'fabric.compaction',
  run_stuck: 'fabric.run_stuck',
  reasoning_cut: 'fabric.reasoning_cut',
  tool_call_recovered: 'fabric.tool_call_recovered',
  text_fallback: 'fabric.text_fallback',
  finish_gate_passed: 'fabric.finish_gate_passed',
};

/** Fields of those events kept as attributes: the small, content-free ones. */
const EVENT_FIELDS = [
  'step',
  'pattern',
  'repeats',
  'action',
  'reason',
  'window_tokens',
  'tokens_before',
  'tokens_after',
  'stubbed',
  'summarised',
  'format',
  'budget_tokens',
] as const;

/** The spans of a finished run; null when its events hold no `run_start` and `run_end`. */
export function buildRunSpans(events: readonly RunEvent[], options: RunSpanOptions): SpanRecord[] | null {
  const start = events.find((event): event is Event<'run_start'> => event.kind === 'run_start');
  const end = events.findLast((event): event is Event<'run_end'> => event.kind === 'run_end');
  if (start === undefined || end === undefined) return null;
  const runId = start.run_id;
  const traceId = traceIdOf(runId);
  const rootId = spanIdOf(runId, start.seq);
  const base = { traceId, parentSpanId: rootId };
  const spans: SpanRecord[] = [];
  const rootEvents: SpanEvent[] = [];
  const chats = new Map<number, { request: Event<'llm_request'>; events: SpanEvent[] }>();
  const tools = new Map<string, { call: Event<'tool_call'>; events: SpanEvent[]; refused: boolean }>();

  const closeChat = (step: number, endEvent: RunEvent, response?: Event<'llm_response'>) => {
    const open = chats.get(step);
    if (open === undefined) return;
    chats.delete(step);
    spans.push(chatSpan(open.request, endEvent, response, open.events, base, options));
  };

  const closeTool = (endEvent: Event<'tool_result' | 'tool_error' | 'finish_rejected'>) => {
    const open = tools.get(endEvent.call_id);
    if (open === undefined) return;
    tools.delete(endEvent.call_id);
    spans.push(toolSpan(open.call, endEvent, open, base, options));
  };

  for (const event of events) {
    switch (event.kind) {
      case 'llm_request':
        closeChat(event.step, event);
        chats.set(event.step, { request: event, events: [] });
        break;
      case 'llm_response':
        closeChat(event.step, event, event);
        break;
      case 'llm_retry':
        chats.get(event.step)?.events.push({
          name: 'fabric.llm_retry',
          timeMs: Date.parse(event.ts),
          attributes: { attempt: event.attempt, delay_ms: event.delay_ms, reason: event.reason },
        });
        break;
      case 'tool_call':
        tools.set(event.call_id, { call: event, events: [], refused: false });
        break;
      case 'security_event': {
        const open = tools.get(event.call_id);
        if (open !== undefined) open.refused = true;
        open?.events.push({
          name: 'fabric.security_event',
          timeMs: Date.parse(event.ts),
          attributes: { event_type: event.event_type, rule: event.rule },
        });
        break;
      }
      case 'finish_rejected':
        rootEvents.push({
          name: 'fabric.finish_rejected',
          timeMs: Date.parse(event.ts),
          attributes: eventFields(event),
        });
        closeTool(event);
        break;
      case 'tool_result':
      case 'tool_error':
        closeTool(event);
        break;
      default: {
        const name = RUN_SPAN_EVENTS[event.kind];
        if (name !== undefined)
          rootEvents.push({ name, timeMs: Date.parse(event.ts), attributes: eventFields(event) });
      }
    }
  }
  // A request or call the run ended in the middle of ends with the run.
  for (const step of [...chats.keys()]) closeChat(step, end);
  for (const open of tools.values()) spans.push(toolSpan(open.call, end, open, base, options));
  spans.unshift(runSpan(start, end, rootEvents, traceId, rootId));
  return spans;
}

function runSpan(
  start: Event<'run_start'>,
  end: Event<'run_end'>,
  events: SpanEvent[],
  traceId: string,
  spanId: string,
): SpanRecord {
  const attributes: Record<string, SpanRecord['attributes'][string]> = {
    [GEN_AI.operationName]: 'invoke_agent',
    [GEN_AI.agentName]: start.specialist,
    [GEN_AI.conversationId]: start.run_id,
    [GEN_AI.requestModel]: start.model,
    [GEN_AI.inputTokens]: end.usage.prompt_tokens,
    [GEN_AI.outputTokens]: end.usage.completion_tokens,
    'fabric.run.status': end.status,
    'fabric.run.steps': end.steps,
    ...providerAttributes(start.backend),
  };
  if (end.usage.cached_tokens !== undefined)
    attributes[GEN_AI.cacheReadInputTokens] = end.usage.cached_tokens;
  if (end.error !== null) attributes[ERROR_TYPE] = end.error.code;
  return {
    traceId,
    spanId,
    name: `invoke_agent ${start.specialist}`,
    kind: 'internal',
    startMs: Date.parse(start.ts),
    endMs: Date.parse(end.ts),
    attributes,
    events,
    status:
      end.status === 'succeeded'
        ? { code: 'ok' }
        : { code: 'error', message: end.error?.message ?? end.status },
  };
}

function chatSpan(
  request: Event<'llm_request'>,
  endEvent: RunEvent,
  response: Event<'llm_response'> | undefined,
  events: SpanEvent[],
  base: { traceId: string; parentSpanId: string },
  options: RunSpanOptions,
): SpanRecord {
  const attributes: Record<string, SpanRecord['attributes'][string]> = {
    [GEN_AI.operationName]: 'chat',
    [GEN_AI.conversationId]: request.run_id,
    [GEN_AI.requestModel]: request.model,
    'fabric.step': request.step,
  };
  if (options.captureContent) attributes[GEN_AI.inputMessages] = JSON.stringify(request.new_messages);
  if (response !== undefined) {
    Object.assign(attributes, providerAttributes(response.backend), {
      [GEN_AI.responseModel]: request.model,
      [GEN_AI.inputTokens]: response.usage.prompt_tokens,
      [GEN_AI.outputTokens]: response.usage.completion_tokens,
      [GEN_AI.responseFinishReasons]: [response.finish_reason ?? 'unknown'],
      'fabric.latency_ms': response.latency_ms,
      'fabric.attempts': response.attempts,
    });
    if (response.usage.cached_tokens !== undefined)
      attributes[GEN_AI.cacheReadInputTokens] = response.usage.cached_tokens;
    // Runlogs written before time to first token was recorded have none: the span leaves it out.
    if (response.ttft_ms !== undefined) {
      attributes[GEN_AI.responseTimeToFirstChunk] = response.ttft_ms / 1000;
      attributes['fabric.ttft_ms'] = response.ttft_ms;
    }
    if (options.captureContent) attributes[GEN_AI.outputMessages] = JSON.stringify([outputMessage(response)]);
  } else {
    attributes[ERROR_TYPE] =
      endEvent.kind === 'run_end' ? (endEvent.error?.code ?? endEvent.status) : 'no_response';
  }
  return {
    ...base,
    spanId: spanIdOf(request.run_id, request.seq),
    name: `chat ${request.model}`,
    kind: 'client',
    startMs: Date.parse(request.ts),
    endMs: Date.parse(endEvent.ts),
    attributes,
    events,
    status:
      response === undefined
        ? { code: 'error', message: 'the model request got no response' }
        : { code: 'unset' },
  };
}

function toolSpan(
  call: Event<'tool_call'>,
  endEvent: RunEvent,
  open: { events: SpanEvent[]; refused: boolean },
  base: { traceId: string; parentSpanId: string },
  options: RunSpanOptions,
): SpanRecord {
  const attributes: Record<string, SpanRecord['attributes'][string]> = {
    [GEN_AI.operationName]: 'execute_tool',
    [GEN_AI.conversationId]: call.run_id,
    [GEN_AI.toolName]: call.tool,
    [GEN_AI.toolCallId]: call.call_id,
    [GEN_AI.toolType]: 'function',
    'fabric.step': call.step,
    'fabric.tool.refused': open.refused,
  };
  if (options.captureContent) attributes[GEN_AI.toolCallArguments] = call.arguments;
  let status: SpanRecord['status'] = { code: 'unset' };
  const outcome = toolOutcome(endEvent);
  attributes['fabric.tool.outcome'] = outcome.outcome;
  if (endEvent.kind === 'tool_result' && options.captureContent)
    attributes[GEN_AI.toolCallResult] = endEvent.result;
  if (outcome.error !== undefined) {
    attributes[ERROR_TYPE] = outcome.outcome;
    status = { code: 'error', message: outcome.error };
  }
  return {
    ...base,
    spanId: spanIdOf(call.run_id, call.seq),
    name: `execute_tool ${call.tool}`,
    kind: 'internal',
    startMs: Date.parse(call.ts),
    endMs: Date.parse(endEvent.ts),
    attributes,
    events: open.events,
    status,
  };
}

/**
 * How a call ended: a result, a tool error (its reason), a rejected finish, or the run's end —
 * which is the accepted `finish_task` when the run succeeded (it has no result line of its own).
 */
function toolOutcome(endEvent: RunEvent): { outcome: string; error?: string } {
  switch (endEvent.kind) {
    case 'tool_result':
      return { outcome: 'ok' };
    case 'tool_error':
      return { outcome: endEvent.reason, error: endEvent.error };
    case 'finish_rejected':
      return { outcome: 'finish_rejected', error: endEvent.message };
    case 'run_end':
      return endEvent.status === 'succeeded'
        ? { outcome: 'finished' }
        : { outcome: 'unfinished', error: `the run ended ${endEvent.status} during the call` };
    default:
      return { outcome: 'unfinished', error: 'the call has no result' };
  }
}

/** `gen_ai.provider.name`, `server.address` and `server.port` from a backend string (`lm_studio http://…`). */
function providerAttributes(backend: string): SpanAttributes {
  const kind = backendKindOf(backend);
  const attributes: Record<string, string | number> = {};
  if (kind !== null) attributes[GEN_AI.providerName] = PROVIDER_NAMES[kind];
  const url = backend.split(' ')[1];
  if (url !== undefined && URL.canParse(url)) {
    const parsed = new URL(url);
    attributes[SERVER_ADDRESS] = parsed.hostname;
    const port = parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
    attributes[SERVER_PORT] = port;
  }
  return attributes;
}

function outputMessage(response: Event<'llm_response'>): unknown {
  const parts: unknown[] = [];
  if (response.content !== '') parts.push({ type: 'text', content: response.content });
  for (const call of response.tool_calls)
    parts.push({ type: 'tool_call', id: call.id, name: call.name, arguments: call.arguments });
  return { role: 'assistant', parts, finish_reason: response.finish_reason ?? 'unknown' };
}

function eventFields(event: RunEvent): SpanAttributes {
  const attributes: Record<string, string | number> = {};
  const record = event as unknown as Record<string, unknown>;
  for (const field of EVENT_FIELDS) {
    const value = record[field];
    if (typeof value === 'string' || typeof value === 'number') attributes[field] = value;
  }
  return attributes;
}
