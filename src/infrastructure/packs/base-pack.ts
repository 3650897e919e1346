import type { FinishSpec, SpecialistPack, Tool } from '../../application/ports.ts';

/** A pack with a fixed tool list and nothing to open or close. */
export function createStaticPack(definition: {
  name: string;
  systemPrompt: string;
  finish: FinishSpec;
  tools: readonly Tool[];
}): SpecialistPack {
  return {
    name: definition.name,
    systemPrompt: definition.systemPrompt,
    finish: definition.finish,
    open: async () => {},
    tools: () => definition.tools,
    close: async () => {},
  };
}
