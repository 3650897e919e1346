/**
 * Imports a custom pack's module from anywhere on disk (SPEC §14), on Node and on Deno. The only
 * runtime-specific code of the registry is here.
 *
 * A pack imports the pack API from `agent-fabric`, and often `valibot`, but lives in a folder of
 * its own with no package.json or node_modules. On Node, module hooks (registered once, on the
 * first custom pack) map `agent-fabric` to the running fabric's own entry — one identity, so its
 * `ToolError` is the runtime's — and `valibot` to the fabric's copy when the pack's folder has
 * none; and a TypeScript file in a pack's folder is an ES module whatever package.json says (or
 * does not), so a pack with no package.json of its own never goes through require() ("Cannot
 * require() ES Module … in a cycle").
 *
 * Which hooks, by Node line:
 * - Node 22.18+ and 24 strip types themselves: in-thread hooks (`module.registerHooks`, no
 *   round trip to a hooks thread) that hand a pack's `.ts` on as `module-typescript`, so Node
 *   strips it. They touch only files under a pack's folder: an embedding program's own `.ts`
 *   modules load as Node would load them.
 * - Node 20 (and 22 before type stripping): tsx, loaded on demand for a TypeScript pack, and
 *   hooks on the hooks thread (`module.register`), the only kind these lines have.
 * A pack's module is imported once per process: a run does not pay a resolution for it again.
 * On Deno, TypeScript runs as it is and the package's deno.json import map (`--config`) names
 * `agent-fabric`.
 */
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';

const TYPESCRIPT = /\.(?:ts|mts|cts)$/;

/** The fabric's public entry, whether this module runs from src/ (.ts) or from dist/ (.js). */
const FABRIC_ENTRY = new URL(
  import.meta.url.endsWith('.ts') ? '../../index.ts' : '../../index.js',
  import.meta.url,
).href;

// For the hooks thread (Node 20): plain JavaScript, registered as a data: URL so the hook needs
// no file of its own and no loader. `agent-fabric` always means this fabric; other mapped
// packages only when the pack's own resolution fails. tsx, registered before, strips the types.
const THREAD_HOOKS = `
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

/** Node's in-thread hooks API (`module.registerHooks`, Node 22.15+ and 23.5+). */
type RegisterHooks = (hooks: {
  resolve(
    specifier: string,
    context: unknown,
    next: (specifier: string, context: unknown) => { url: string },
  ): { url: string; shortCircuit?: boolean };
  load(
    url: string,
    context: { format?: string | null | undefined },
    next: (url: string, context: unknown) => unknown,
  ): unknown;
}) => unknown;

/** Folders of the packs imported so far (file: URLs ending in `/`): the in-thread hooks act there only. */
const packFolders = new Set<string>();
const modules = new Map<string, Promise<Record<string, unknown>>>();
let hooked: Promise<void> | undefined;
let typescript: Promise<void> | undefined;

/** Imports the module at `path` (absolute) the way a custom pack needs, once per process. */
export function importPackModule(path: string): Promise<Record<string, unknown>> {
  let loaded = modules.get(path);
  if (loaded === undefined) {
    loaded = importOnce(path);
    modules.set(path, loaded);
    // A failed import is not kept: the user may fix the file while a server keeps running.
    loaded.catch(() => modules.delete(path));
  }
  return loaded;
}

async function importOnce(path: string): Promise<Record<string, unknown>> {
  if (!isDeno()) {
    packFolders.add(pathToFileURL(`${dirname(path)}/`).href);
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
  const nodeModule = await import('node:module');
  const fallbacks = packageFallbacks();
  const registerInThread = (nodeModule as { registerHooks?: RegisterHooks }).registerHooks;
  if (stripsTypes() && registerInThread !== undefined) {
    registerInThread({
      resolve(specifier, context, next) {
        if (specifier === 'agent-fabric') return { url: FABRIC_ENTRY, shortCircuit: true };
        try {
          return next(specifier, context);
        } catch (error) {
          const fallback = fallbacks[specifier];
          if (fallback === undefined) throw error;
          return { url: fallback, shortCircuit: true };
        }
      },
      load(url, context, next) {
        if (/\.(?:ts|mts)$/.test(url) && !url.includes('/node_modules/') && inPackFolder(url))
          return next(url, { ...context, format: 'module-typescript' });
        return next(url, context);
      },
    });
    return;
  }
  nodeModule.register(`data:text/javascript,${encodeURIComponent(THREAD_HOOKS)}`, {
    data: { fabric: FABRIC_ENTRY, fallbacks },
  });
}

function inPackFolder(url: string): boolean {
  for (const folder of packFolders) if (url.startsWith(folder)) return true;
  return false;
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

/** Node 22.18+ and 24 strip types themselves (`process.features.typescript`); Node 20 does not. */
function stripsTypes(): boolean {
  const features = (globalThis as { process?: { features?: { typescript?: unknown } } }).process?.features;
  return Boolean(features?.typescript);
}
