import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_KINDS, CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { type RunningApi, eventsOf, makeFabric, postJson, readSse, startApi } from './http-harness.ts';

const MODEL = 'qwen/qwen3-coder-30b';
const TASK = { specialist: 'units', task: 'Convert 3 km to miles' };

describe('the HTTP API on a real socket, against the fake LM Studio', () => {
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  let api: RunningApi;

  const start = async (script: ScriptedTurn[]) => {
    llm = await startFakeLlmServer({ flavor: 'lm_studio', models: [{ id: MODEL, toolUse: true }], script });
    api = await startApi(await makeFabric(sandbox, llm.url));
  };

  beforeEach(async () => {
    sandbox = await makeSandbox();
  });
  afterEach(async () => {
    await api?.stop();
    await llm?.stop();
    await sandbox.cleanup();
  });

  it('starts a run, streams its events over SSE to run_end, and serves the same story as JSON and NDJSON', async () => {
    await start(CONVERSION_SCRIPT);
    const started = await postJson(`${api.url}/v1/runs`, TASK);
    expect(started.status).toBe(202);
    const { run_id, status, links } = (await started.json()) as {
      run_id: string;
      status: string;
      links: { self: string; events: string; runlog: string };
    };
    expect(status).toBe('running');
    expect(started.headers.get('location')).toBe(links.self);

    const stream = await fetch(`${api.url}${links.events}`);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = await readSse(stream);
    const events = eventsOf(frames);
    expect(frames.map((frame) => frame.id)).toEqual(events.map((event) => String(event.seq)));
    expect(frames.map((frame) => frame.event)).toEqual(events.map((event) => event.kind));
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.map((event) => event.kind)).toEqual(CONVERSION_KINDS);
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded', run_id });

    const run = (await (await fetch(`${api.url}${links.self}`)).json()) as Record<string, unknown>;
    expect(run).toMatchObject({
      run_id,
      status: 'succeeded',
      payload: { summary: 'Converted 3 km.', answer: '1.864114 mi' },
      model: MODEL,
      steps: 3,
      usage: { prompt_tokens: 450, completion_tokens: 36, total_tokens: 486 },
    });

    const runlog = await fetch(`${api.url}${links.runlog}`);
    expect(runlog.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await runlog.text()).trim().split('\n');
    expect(lines.map((line) => JSON.parse(line) as RunEvent)).toEqual(events);
    expect(lines.join('\n')).toBe((await readFile(String(run.runlog), 'utf8')).trim());

    const list = (await (await fetch(`${api.url}/v1/runs?limit=5`)).json()) as { runs: { run_id: string }[] };
    expect(list.runs.map((r) => r.run_id)).toEqual([run_id]);
  });

  it('resumes a finished run’s stream after Last-Event-ID, and replays its timeline', async () => {
    await start(CONVERSION_SCRIPT);
    const { run_id } = (await (await postJson(`${api.url}/v1/runs`, TASK)).json()) as { run_id: string };
    const all = eventsOf(await readSse(await fetch(`${api.url}/v1/runs/${run_id}/events`)));
    const resumed = eventsOf(
      await readSse(
        await fetch(`${api.url}/v1/runs/${run_id}/events`, { headers: { 'last-event-id': '5' } }),
      ),
    );
    expect(resumed.map((event) => event.seq)).toEqual(all.filter((event) => event.seq > 5).map((e) => e.seq));
    expect(resumed[0]?.seq).toBe(6);
    expect(resumed.at(-1)?.kind).toBe('run_end');

    const timeline = (await (await postJson(`${api.url}/v1/runs/${run_id}/replay`, {})).json()) as {
      run_id: string;
      totals: { status: string };
      entries: unknown[];
    };
    expect(timeline).toMatchObject({ run_id, totals: { status: 'succeeded' } });
    expect(timeline.entries.length).toBeGreaterThan(0);
    const replayed = (await (
      await postJson(`${api.url}/v1/runs/${run_id}/replay`, { execute: true })
    ).json()) as {
      identical: boolean;
      replay: { status: string };
    };
    expect(replayed).toMatchObject({ identical: true, replay: { status: 'succeeded' } });
  });

  it('cancels a run whose model hangs, which ends cancelled, and answers 409 to a second cancel', async () => {
    await start([{ hang: true }]);
    const { run_id } = (await (await postJson(`${api.url}/v1/runs`, TASK)).json()) as { run_id: string };
    // Once the model has been asked, the run is waiting on the hanging turn.
    const live = await fetch(`${api.url}/v1/runs/${run_id}/events`);
    const seen = await readSse(live, (frame) => frame.event === 'llm_request');
    expect(seen.at(-1)?.event).toBe('llm_request');
    expect(((await (await fetch(`${api.url}/v1/runs/${run_id}`)).json()) as { status: string }).status).toBe(
      'running',
    );

    const cancel = await fetch(`${api.url}/v1/runs/${run_id}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toMatchObject({
      run_id,
      status: 'cancelled',
      error: { code: 'run_cancelled' },
    });
    const again = await fetch(`${api.url}/v1/runs/${run_id}/cancel`, { method: 'POST' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { code: 'run_not_active' } });
    const events = eventsOf(await readSse(await fetch(`${api.url}/v1/runs/${run_id}/events`)));
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'cancelled' });
  });

  it('cancels the runs in progress when it stops, after each has written its run_end', async () => {
    await start([{ hang: true }]);
    const { run_id } = (await (await postJson(`${api.url}/v1/runs`, TASK)).json()) as { run_id: string };
    await readSse(
      await fetch(`${api.url}/v1/runs/${run_id}/events`),
      (frame) => frame.event === 'llm_request',
    );
    const follower = readSse(
      await fetch(`${api.url}/v1/runs/${run_id}/events`, { headers: { 'last-event-id': '2' } }),
    );
    await api.hub.close();
    const tail = eventsOf(await follower);
    expect(tail.at(-1)).toMatchObject({ kind: 'run_end', status: 'cancelled' });
    expect(api.hub.list()).toEqual([]);
  });

  it('serves the MCP server over streamable HTTP at /mcp', async () => {
    await start([]);
    const client = new Client({ name: 'http-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(['run_task', 'list_specialists', 'get_run', 'list_models']),
      );
      const listed = await client.callTool({ name: 'list_specialists', arguments: {} });
      expect(JSON.stringify(listed.structuredContent)).toContain('units');
    } finally {
      await client.close();
    }
  });
});
