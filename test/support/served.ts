/** What is read of a `fabric serve` subprocess (an execa result promise). */
export interface ServeProcess extends PromiseLike<unknown> {
  readonly stderr: { on(event: 'data', listener: (chunk: Buffer) => void): unknown } | null;
}

/**
 * A `fabric serve` subprocess's address, once it says it listens; its stderr so far stays
 * readable through `stderr()` (rejects with that output if the server exits first).
 */
export async function listeningOn(serve: ServeProcess): Promise<{ url: string; stderr: () => string }> {
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    serve.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
      if (found) resolve(found);
    });
    serve.then(() => reject(new Error(`fabric serve exited early:\n${stderr}`)), reject);
  });
  return { url, stderr: () => stderr };
}

/** Starts a run with `POST /v1/runs` and polls `GET /v1/runs/:id` until it is no longer running. */
export async function runToEnd(url: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const started = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (started.status !== 202)
    throw new Error(`POST /v1/runs answered ${started.status}: ${await started.text()}`);
  const { run_id } = (await started.json()) as { run_id: string };
  for (let poll = 0; poll < 1200; poll++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const run = (await (await fetch(`${url}/v1/runs/${run_id}`)).json()) as Record<string, unknown>;
    if (run.status !== undefined && run.status !== 'running' && run.status !== 'queued') return run;
  }
  throw new Error(`run ${run_id} did not end within 60 s`);
}
