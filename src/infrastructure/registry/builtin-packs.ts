import { lazy } from '../lazy-import.ts';
import type { BuiltinPacks } from './config-registry.ts';

/** The built-in packs, `builtin:<name>`. Each is imported when a specialist first uses it, once. */
export const BUILTIN_PACKS: BuiltinPacks = {
  rust: lazy(async () => (await import('../packs/rust/rust-pack.ts')).buildRustPack),
  research: lazy(async () => (await import('../packs/research/research-pack.ts')).buildResearchPack),
};
