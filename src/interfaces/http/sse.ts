import type { RunEvent } from '../../domain/run-events.ts';

/** How often an idle stream sends a comment, so proxies and clients do not time it out. */
const KEEP_ALIVE_MS = 15_000;

/** What a stream sends: a runlog line, or a battery's progress event; its seq is the SSE id. */
export interface SseEvent {
  readonly seq: number;
  readonly kind: string;
}

/** One event as a Server-Sent Events frame: the event, named by its kind, with its seq as id. */
export function sseFrame(event: SseEvent): string {
  // JSON.stringify never emits a raw newline, so the data fits on one `data:` line.
  return `id: ${event.seq}\nevent: ${event.kind}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Where a stream's events come from: `start` sends and ends it, and returns how to stop early. */
export type EventSource<E extends SseEvent = RunEvent> = (
  send: (event: E) => void,
  end: () => void,
) => (() => void) | undefined;

/**
 * A `text/event-stream` response fed by `source`. The stream ends after its last event (`run_end`
 * unless `isLast` says otherwise) or when the source ends it; a client that goes away cancels
 * it, which stops the source.
 */
export function sseResponse<E extends SseEvent = RunEvent>(
  source: EventSource<E>,
  isLast: (event: E) => boolean = (event) => event.kind === 'run_end',
): Response {
  const encoder = new TextEncoder();
  let stop: (() => void) | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const finish = () => {
    closed = true;
    if (timer !== undefined) clearInterval(timer);
    stop?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const end = () => {
        if (closed) return;
        finish();
        controller.close();
      };
      const send = (event: E) => {
        if (closed) return;
        controller.enqueue(encoder.encode(sseFrame(event)));
        if (isLast(event)) end();
      };
      timer = setInterval(() => {
        if (!closed) controller.enqueue(encoder.encode(': keep-alive\n\n'));
      }, KEEP_ALIVE_MS);
      stop = source(send, end);
      // The source may have ended the stream while it started (a finished run's backlog).
      if (closed) stop?.();
    },
    cancel() {
      finish();
    },
  });
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    },
  });
}
