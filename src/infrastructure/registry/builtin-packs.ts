import type { BuiltinPacks } from './config-registry.ts';

/** The built-in packs, `builtin:<name>`. Each is imported only when a specialist uses it. */
export const BUILTIN_PACKS: BuiltinPacks = {
  rust: async () => (await import('../packs/rust/rust-pack.ts')).buildRustPack,
  research: async () => (await import('../packs/research/research-pack.ts')).buildResearchPack,
};
