/**
 * What running a tool does to the world (SPEC §18), declared by the tool beside its schema. A
 * resumed run decides from it what to do with a call that started and has no result:
 * - `read`: changes nothing; run again.
 * - `idempotent`: twice is the same as once (a whole-file write, `cargo check`); run again.
 * - `transform`: twice is wrong (an edit that replaces text); checked against the workspace.
 * - `external`: anything else (a command, a remote call); never run again.
 */
export type EffectClass = 'read' | 'idempotent' | 'transform' | 'external';

/** Every effect class, from the harmless to the irreversible. */
export const EFFECT_CLASSES: readonly EffectClass[] = ['read', 'idempotent', 'transform', 'external'];

/** True for a class whose call is recorded (`tool_started`) before it runs. */
export function hasEffect(effect: EffectClass): boolean {
  return effect !== 'read';
}
