import { realpath, stat } from 'node:fs/promises';
import * as v from 'valibot';
import type {
  FinishGate,
  PackBuilder,
  PackBuildContext,
  SpecialistPack,
} from '../../../application/ports.ts';
import { errorMessage, FabricError } from '../../../domain/errors.ts';
import { allowRuleCommands } from '../../registry/policy-guard.ts';
import { CommandSandbox } from '../../sandbox/command-sandbox.ts';
import { PathScope } from '../../sandbox/path-scope.ts';
import { recordPathsIn } from '../../sandbox/record-paths.ts';
import { defineFinish } from '../define-tool.ts';
import { cargoCheck } from './cargo-check.ts';
import { commandTools } from './command-tools.ts';
import { fileTools } from './file-tools.ts';
import { rustSandbox } from './rust-sandbox.ts';
import { loadRustSystemPrompt } from './system-prompt.ts';

/** Pack-specific `options`: where bubblewrap and the toolchain are, when not in the usual places. */
const RustOptionsSchema = v.object({
  bwrap_path: v.optional(v.string()),
  cargo_home: v.optional(v.string()),
  rustup_home: v.optional(v.string()),
});

const RustFinishSchema = v.object({
  summary: v.pipe(v.string(), v.minLength(1), v.description('What was done, in a few sentences.')),
  artifacts: v.optional(v.array(v.string()), []),
  next_steps: v.optional(v.array(v.string()), []),
  notes: v.optional(v.string()),
});

/**
 * Builds the Rust compositor engineer pack (SPEC §4.1) for a workspace: file tools confined to
 * it, `shell` and `cargo_check` through the command sandbox, and a finish gate that accepts
 * `finish_task` only when `cargo check` passes.
 */
export const buildRustPack: PackBuilder = async (context) => {
  const root = await requireWorkspace(context);
  const sandboxConfig = rustSandbox(context.config.sandbox);
  const options = v.safeParse(RustOptionsSchema, context.config.options);
  if (!options.success) {
    throw new FabricError(
      'config_invalid',
      `specialists.${context.specialist}.options: bwrap_path, cargo_home and rustup_home must be strings.`,
    );
  }
  // The runs directory and config file, when they lie in the workspace: out of every tool's reach.
  const record = await recordPathsIn(await realpath(root), context.settings);
  const scope = await PathScope.create(root, record);
  // A command an `allow` rule names runs as an allowlisted one, in the same sandbox (SPEC §19).
  const allowedCommands = [...sandboxConfig.allowed_commands, ...allowRuleCommands(context.policy ?? [])];
  const sandbox = new CommandSandbox({
    root: scope.root,
    allowedCommands,
    timeoutMs: sandboxConfig.timeout_s * 1000,
    network: sandboxConfig.network,
    outputLimitBytes: sandboxConfig.output_limit_bytes,
    whenNoOsSandbox: sandboxConfig.when_no_os_sandbox,
    bwrapPath: options.output.bwrap_path,
    toolchain: { cargoHome: options.output.cargo_home, rustupHome: options.output.rustup_home },
    onNotice: (message) => console.warn(`agent-fabric [${context.specialist}]: ${message}`),
    record,
  });
  const tools = [...fileTools(scope), ...commandTools(sandbox, allowedCommands)];
  const pack: SpecialistPack & FinishGate = {
    name: context.specialist,
    systemPrompt: await loadRustSystemPrompt(),
    finish: defineFinish(
      'Report the finished task: what you did (summary), the files you created or changed (artifacts), what is left (next_steps). Accepted only when the workspace compiles.',
      RustFinishSchema,
    ),
    open: async () => {},
    tools: () => tools,
    close: async () => {},
    checkFinish: async (_payload, toolContext) => {
      try {
        const outcome = await cargoCheck(sandbox, toolContext.signal);
        // The first line only (`cargo check passed (0 errors, 1 warning).`): the list is in cargo_check's results.
        if (outcome.ok) return { ok: true, message: outcome.report.split('\n')[0] ?? 'cargo check passed.' };
        return {
          ok: false,
          message: `finish_task is accepted only when the workspace compiles. ${outcome.report}\nFix these, run cargo_check, then call finish_task again.`,
        };
      } catch (error) {
        return {
          ok: false,
          message: `The finish gate could not compile-check the workspace: ${errorMessage(error)}`,
        };
      }
    },
  };
  return pack;
};

async function requireWorkspace(context: PackBuildContext): Promise<string> {
  const { specialist, workspace } = context;
  if (workspace === undefined) {
    throw new FabricError(
      'config_invalid',
      `Specialist "${specialist}" needs a workspace: set specialists.${specialist}.workspace in the config or pass --workspace DIR.`,
    );
  }
  const info = await stat(workspace).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) {
    throw new FabricError(
      'config_invalid',
      `Specialist "${specialist}": the workspace ${workspace} ${info === undefined ? 'does not exist' : 'is not a directory'}. ` +
        "Create it, or point --workspace (or the specialist's workspace setting) at the Cargo project folder.",
      { details: { specialist, workspace } },
    );
  }
  return workspace;
}
