import { stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type {
  FabricSettings,
  PackBuilder,
  SpecialistInfo,
  SpecialistPack,
  SpecialistRegistry,
} from '../../application/ports.ts';
import type { SpecialistConfig } from '../../config/schema.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { type PlacedRule, type PolicyRule, rulesFor } from '../../domain/policy.ts';
import { importPackModule } from './import-pack-module.ts';
import { guardPack } from './policy-guard.ts';

/** Built-in pack builders by name (`builtin:<name>`), imported only when used. */
export type BuiltinPacks = Readonly<Record<string, () => Promise<PackBuilder>>>;

export interface ConfigRegistryOptions {
  readonly specialists: Readonly<Record<string, SpecialistConfig>>;
  /** Directory relative builder paths are resolved against (the config file's). */
  readonly baseDir: string;
  readonly builtins: BuiltinPacks;
  /**
   * Passed to every pack. `runsDir` and `configFile` are the record the packs' tools must not
   * reach (SPEC §6): the composition root passes `config.runs_dir` and `config.source`.
   */
  readonly settings: FabricSettings;
  /** The top-level `policy.rules`; each specialist's own come in front of them (SPEC §19). */
  readonly policy?: readonly PolicyRule[] | undefined;
  /** Wraps a built pack, e.g. to attach MCP servers. Pack builders know nothing of it. */
  readonly wrap?: (
    pack: SpecialistPack,
    name: string,
    config: SpecialistConfig,
    /** The absolute workspace of this build (MCP servers run there by default), and the settings. */
    context: { readonly workspace: string | undefined; readonly settings: FabricSettings },
  ) => SpecialistPack;
}

/** Builds packs from configuration: `builtin:<name>`, or `./module.ts#exportName` for a custom pack. */
export class ConfigRegistry implements SpecialistRegistry {
  readonly #options: ConfigRegistryOptions;

  constructor(options: ConfigRegistryOptions) {
    this.#options = options;
  }

  /** The settings every pack is built with. */
  get settings(): FabricSettings {
    return this.#options.settings;
  }

  list(): readonly SpecialistInfo[] {
    return Object.entries(this.#options.specialists).map(([name, config]) => ({
      name,
      description: config.description,
      builder: config.builder,
      model: config.model,
      workspace: config.workspace,
    }));
  }

  config(name: string): SpecialistConfig {
    const config = this.#options.specialists[name];
    if (!config) {
      const known = Object.keys(this.#options.specialists).join(', ') || '(none)';
      throw new FabricError(
        'specialist_unknown',
        `No specialist "${name}". Configured specialists: ${known}. \`fabric specialists\` lists them.`,
      );
    }
    return config;
  }

  async getPack(name: string, options: { workspace?: string } = {}): Promise<SpecialistPack> {
    const config = this.config(name);
    const builder = await this.#builder(name, config.builder);
    const workspace = options.workspace ?? config.workspace;
    const policy = this.policyFor(name);
    let pack: SpecialistPack;
    try {
      pack = await builder({
        specialist: name,
        config,
        workspace: workspace === undefined ? undefined : resolve(workspace),
        settings: this.#options.settings,
        policy,
      });
    } catch (error) {
      if (error instanceof FabricError) throw error;
      throw new FabricError(
        'pack_load_failed',
        `Specialist "${name}": its pack failed to build: ${errorMessage(error)}`,
        {
          cause: error,
        },
      );
    }
    if (!isPack(pack)) {
      throw new FabricError(
        'pack_load_failed',
        `Specialist "${name}": builder "${config.builder}" did not return a pack ` +
          '(an object with name, systemPrompt, finish, open, tools and close).',
      );
    }
    // Outermost: the policy also governs the tools an MCP server adds.
    if (!this.#options.wrap) return guardPack(pack, policy);
    return guardPack(
      this.#options.wrap(pack, name, config, {
        workspace: workspace === undefined ? undefined : resolve(workspace),
        settings: this.#options.settings,
      }),
      policy,
    );
  }

  /** The specialist's rules in front of the top-level ones, each with where it is written. */
  policyFor(name: string): PlacedRule[] {
    return rulesFor(name, this.config(name).policy?.rules, this.#options.policy);
  }

  async #builder(name: string, ref: string): Promise<PackBuilder> {
    if (ref.startsWith('builtin:')) {
      const key = ref.slice('builtin:'.length);
      const load = this.#options.builtins[key];
      if (!load) {
        const known = Object.keys(this.#options.builtins)
          .map((k) => `builtin:${k}`)
          .join(', ');
        throw new FabricError(
          'pack_load_failed',
          `Specialist "${name}": unknown builder "${ref}". Built-ins: ${known}.`,
        );
      }
      return load();
    }
    const hash = ref.lastIndexOf('#');
    if (hash <= 0 || hash === ref.length - 1) {
      throw new FabricError(
        'pack_load_failed',
        `Specialist "${name}": builder "${ref}" must be "builtin:<name>" or "<module path>#<export name>", ` +
          'e.g. "./packs/example/pack.ts#buildPack".',
      );
    }
    const modulePath = ref.slice(0, hash);
    const exportName = ref.slice(hash + 1);
    const path = isAbsolute(modulePath) ? modulePath : resolve(this.#options.baseDir, modulePath);
    if (!(await exists(path))) {
      throw new FabricError(
        'pack_load_failed',
        `Specialist "${name}": builder module not found: ${path} (from "${ref}", relative to ${this.#options.baseDir}).`,
      );
    }
    let module: Record<string, unknown>;
    try {
      module = await importPackModule(path);
    } catch (error) {
      throw new FabricError(
        'pack_load_failed',
        `Specialist "${name}": cannot load builder module ${path}: ${errorMessage(error)}`,
        { cause: error },
      );
    }
    const builder = module[exportName];
    if (typeof builder !== 'function') {
      const exported = Object.keys(module).join(', ') || '(nothing)';
      throw new FabricError(
        'pack_load_failed',
        `Specialist "${name}": ${path} has no function export "${exportName}" (it exports: ${exported}).`,
      );
    }
    return builder as PackBuilder;
  }
}

function isPack(value: unknown): value is SpecialistPack {
  if (value === null || typeof value !== 'object') return false;
  const pack = value as Record<string, unknown>;
  return (
    typeof pack.name === 'string' &&
    typeof pack.systemPrompt === 'string' &&
    typeof pack.finish === 'object' &&
    typeof pack.open === 'function' &&
    typeof pack.tools === 'function' &&
    typeof pack.close === 'function'
  );
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
