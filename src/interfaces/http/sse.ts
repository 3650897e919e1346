import type { RunEvent } from '../../domain/run-events.ts';

/** How often an idle stream sends a comment, so proxies and clients do not time it out. */
const KEEP_ALIVE_MS = 15_000;

/** One event as a Server-Sent Events frame: the runlog line, named by its kind, with its seq as id. */
export function sseFrame(event: RunEvent): string {
  // JSON.stringify never emits a raw newline, so the data fits on one `data:` line.
  return `id: ${event.seq}\nevent: ${event.kind}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Where a stream's events come from: `start` sends and ends it, and returns how to stop early. */
export type EventSource = (send: (event: RunEvent) => void, end: () => void) => (() => void) | undefined;

/**
 * A `text/event-stream` response fed by `source`. The stream ends after `run_end` or when the
 * source ends it; a client that goes away cancels it, which stops the source.
 */
export function sseResponse(source: EventSource): Response {
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
      const send = (event: RunEvent) => {
        if (closed) return;
        controller.enqueue(encoder.encode(sseFrame(event)));
        if (event.kind === 'run_end') end();
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
