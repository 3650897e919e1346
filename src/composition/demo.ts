import { cp, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../infrastructure/llm/demo/scripted-model-server.ts';

export { DEMO_MODEL, DEMO_TASK } from '../infrastructure/llm/demo/demo-script.ts';

/** The example crate the package ships (beside dist/ in an install, beside src/ in a clone). */
const EXAMPLE_CRATE = new URL('../../examples/compositor/', import.meta.url);

/** Where a demo runs: its directory, the crate's copy, its config and runs, and its model server. */
export interface DemoPlace {
  readonly dir: string;
  readonly workspace: string;
  readonly configPath: string;
  readonly runsDir: string;
  readonly model: ScriptedModelServer;
}

/**
 * Sets a demo up: a temporary directory holding a copy of the example crate, the scripted model
 * on loopback, and a fabric.yaml that points the fabric at it (and at no other server, so a
 * running LM Studio or Ollama is left alone). The directory stays after the demo, to look at.
 */
export async function prepareDemo(): Promise<DemoPlace> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-demo-'));
  const workspace = join(dir, 'compositor');
  await cp(EXAMPLE_CRATE, workspace, {
    recursive: true,
    // A clone may hold the example's build output; the copy starts clean.
    filter: (source) => !/[/\\]target(?:[/\\]|$)/.test(source.slice(EXAMPLE_CRATE.pathname.length)),
  });
  const model = await startScriptedModelServer();
  const configPath = join(dir, 'fabric.yaml');
  await writeFile(configPath, demoConfig(model.url));
  return { dir, workspace, configPath, runsDir: join(dir, 'runs'), model };
}

/** The demo's config: JSON is YAML, and the model's URL is written as it was when the demo ran. */
function demoConfig(modelUrl: string): string {
  const config = {
    version: 1,
    llm: {
      lm_studio_urls: [modelUrl],
      // Port 9 (discard) on loopback: no Ollama is asked, whatever runs on this machine.
      ollama_url: 'http://127.0.0.1:9',
      retry: { max_attempts: 2, base_delay_ms: 100, max_delay_ms: 500 },
    },
    runs_dir: 'runs',
    specialists: {
      rust: {
        description: 'Rust engineer in a sandboxed workspace (here with the demo scripted model)',
        builder: 'builtin:rust',
        sandbox: { allowed_commands: ['cargo check', 'cargo test'], timeout_s: 300, network: false },
      },
    },
  };
  return `# Written by \`fabric demo\`: the fabric against its built-in scripted model (demo-scripted),
# which listened on ${modelUrl} while the demo ran.
${JSON.stringify(config, null, 2)}
`;
}
