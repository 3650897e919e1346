import type { PackBuilder } from '../../application/ports.ts';

/**
 * Declares a custom pack: the builder a config's `builder: ./file.ts#name` names. It returns the
 * builder as it is; it exists so a pack written in JavaScript gets its context and result typed
 * by an editor, and a pack reads as one.
 */
export function definePack(builder: PackBuilder): PackBuilder {
  return builder;
}
