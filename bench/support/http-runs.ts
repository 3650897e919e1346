/** A client of the HTTP API: start a run and follow its events to `run_end`. */

export interface HttpRunOutcome {
  readonly runId: string;
  /** From sending `POST /v1/runs` to reading `run_end` on the event stream. */
  readonly latencyMs: number;
}

/** Starts a run and follows it; throws unless it succeeds in `steps` steps. */
export async function httpRun(baseUrl: string, task: string, steps: number): Promise<HttpRunOutcome> {
  const started = performance.now();
  const response = await fetch(`${baseUrl}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ specialist: 'units', task, max_steps: steps + 5 }),
  });
  const answer = (await response.json()) as { run_id?: string };
  if (response.status !== 202 || answer.run_id === undefined)
    throw new Error(`bench: POST /v1/runs answered ${response.status}: ${JSON.stringify(answer)}`);
  const end = await followToEnd(baseUrl, answer.run_id);
  const latencyMs = performance.now() - started;
  if (end.status !== 'succeeded' || end.steps !== steps)
    throw new Error(
      `bench: run ${answer.run_id} ended ${end.status} after ${end.steps} steps: ${JSON.stringify(end.error)}`,
    );
  return { runId: answer.run_id, latencyMs };
}

interface RunEnd {
  status: string;
  steps: number;
  error: unknown;
}

async function followToEnd(baseUrl: string, runId: string): Promise<RunEnd> {
  const response = await fetch(`${baseUrl}/v1/runs/${runId}/events`);
  if (!response.ok || response.body === null)
    throw new Error(`bench: events of ${runId} answered ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    let cut = buffer.indexOf('\n\n');
    while (cut !== -1) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (/^event: run_end$/m.test(event)) {
        await reader.cancel();
        const data = /^data: (.*)$/m.exec(event)?.[1] ?? '{}';
        return JSON.parse(data) as RunEnd;
      }
      cut = buffer.indexOf('\n\n');
    }
  }
  throw new Error(`bench: the events of ${runId} ended without run_end`);
}
