/**
 * The sandbox of a specialist's commands, in one place: the rust pack's `shell` and
 * `cargo_check`, a battery's `expect.commands` and the daemon's validation all run under it.
 */
import * as v from 'valibot';
import { type SandboxConfig, SandboxSchema, type SpecialistConfig } from '../../../config/schema.ts';

/** The commands the rust pack allows when the specialist configures no sandbox at all. */
export const DEFAULT_RUST_COMMANDS = [
  'cargo check',
  'cargo build',
  'cargo test',
  'cargo clippy',
  'cargo fmt',
];

/**
 * The rust pack's sandbox: the specialist's own when it configures one; otherwise the schema's
 * defaults (300 s, no network, 64 KiB of output) with `DEFAULT_RUST_COMMANDS`.
 */
export function rustSandbox(configured: SandboxConfig | undefined): SandboxConfig {
  return configured ?? { ...v.parse(SandboxSchema, {}), allowed_commands: DEFAULT_RUST_COMMANDS };
}

/**
 * The sandbox a specialist's commands run in: the rust pack's for `builtin:rust`; for any other
 * builder its own, or the schema's defaults, which allow no command.
 */
export function specialistSandbox(config: Pick<SpecialistConfig, 'builder' | 'sandbox'>): SandboxConfig {
  if (config.builder === 'builtin:rust') return rustSandbox(config.sandbox);
  return config.sandbox ?? v.parse(SandboxSchema, {});
}
