/**
 * Imports a custom pack's module from anywhere on disk (SPEC §14), on Node and on Deno. The only
 * runtime-specific code of the registry is here.
 *
 * A pack imports the pack API from `agent-fabric`, and often `valibot`, but lives in a folder of
 * its own with no package.json or node_modules. On Node a resolve hook (registered once, on the
 * first custom pack) maps `agent-fabric` to the running fabric's own entry — one identity, so
 * its `ToolError` is the runtime's — and `valibot` to the fabric's copy when the pack's folder
 * has none. A TypeScript pack on a Node without type stripping (Node 20) loads tsx, on demand:
 * nothing else needs a TypeScript loader. On Deno, TypeScript runs as it is and the package's
 * deno.json import map (`--config`) names `agent-fabric`.
 */
import { pathToFileURL } from 'node:url';

const TYPESCRIPT = /\.(?:ts|mts|cts)$/;

/** The fabric's public entry, whether this module runs from src/ (.ts) or from dist/ (.js). */
const FABRIC_ENTRY = new URL(
  import.meta.url.endsWith('.ts') ? '../../index.ts' : '../../index.js',
  import.meta.url,
).href;

// Plain JavaScript, registered as a data: URL so the hook needs no file of its own and no loader.
// `agent-fabric` always means this fabric; other mapped packages only when the pack's own
// resolution fails. A TypeScript file is an ES module whatever package.json says (or does not),
// so a pack with no package.json of its own never goes through require() ("Cannot require() ES
// Module … in a cycle").
const HOOKS = `
let fabric; let fallbacks = {};
export function initialize(data) { fabric = data.fabric; fallbacks = data.fallbacks; }
export async function resolve(specifier, context, next) {
  if (specifier === 'agent-fabric') return { url: fabric, shortCircuit: true };
  try {
    return await next(specifier, context);
  } catch (error) {
    const fallback = fallbacks[specifier];
    if (fallback === undefined) throw error;
    return { url: fallback, shortCircuit: true };
  }
}
export async function load(url, context, next) {
  if (url.startsWith('file:') && /\\.(?:ts|mts)$/.test(url) && !url.includes('/node_modules/'))
    return next(url, { ...context, format: 'module' });
  return next(url, context);
}
`;

let hooked: Promise<void> | undefined;
let typescript: Promise<void> | undefined;

/** Imports the module at `path` (absolute) the way a custom pack needs. */
export async function importPackModule(path: string): Promise<Record<string, unknown>> {
  if (!isDeno()) {
    if (TYPESCRIPT.test(path) && !stripsTypes()) {
      typescript ??= import('tsx/esm/api').then(({ register }) => {
        register();
      });
      await typescript;
    }
    hooked ??= registerHooks();
    await hooked;
  }
  try {
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    // Deno without the package's deno.json: say how to start it so `agent-fabric` resolves.
    if (isDeno() && /"agent-fabric"/.test(String(error))) {
      throw new Error(
        `${String(error)}\nOn Deno, start the fabric with its package's deno.json, which maps agent-fabric: ` +
          `deno run -A --config ${new URL('../../../deno.json', import.meta.url).pathname} ...`,
        { cause: error },
      );
    }
    throw error;
  }
}

async function registerHooks(): Promise<void> {
  const { register } = await import('node:module');
  register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
    data: { fabric: FABRIC_ENTRY, fallbacks: packageFallbacks() },
  });
}

/** The fabric's own copies of the packages a pack may import without installing them. */
function packageFallbacks(): Record<string, string> {
  try {
    return { valibot: import.meta.resolve('valibot') };
  } catch {
    return {}; // a host without import.meta.resolve (a test runner's module loader)
  }
}

function isDeno(): boolean {
  return (globalThis as { Deno?: unknown }).Deno !== undefined;
}

/** Node 22.6+ strips types itself (`process.features.typescript`); Node 20 does not. */
function stripsTypes(): boolean {
  const features = (globalThis as { process?: { features?: { typescript?: unknown } } }).process?.features;
  return Boolean(features?.typescript);
}
