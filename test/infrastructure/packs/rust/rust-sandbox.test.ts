import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { SandboxSchema } from '../../../../src/config/schema.ts';
import {
  DEFAULT_RUST_COMMANDS,
  specialistSandbox,
} from '../../../../src/infrastructure/packs/rust/rust-sandbox.ts';

describe('the sandbox of a specialist’s commands', () => {
  const defaults = v.parse(SandboxSchema, {});

  it('gives builtin:rust without a sandbox the schema’s defaults and the cargo commands', () => {
    expect(specialistSandbox({ builder: 'builtin:rust' })).toEqual({
      ...defaults,
      allowed_commands: DEFAULT_RUST_COMMANDS,
    });
  });

  it('gives any other builder without a sandbox no command at all', () => {
    expect(specialistSandbox({ builder: './packs/example/pack.ts#buildPack' })).toEqual(defaults);
    expect(defaults.allowed_commands).toEqual([]);
  });

  it('keeps a specialist’s own sandbox as it is', () => {
    const own = { ...defaults, allowed_commands: ['cargo check'], timeout_s: 120 };
    expect(specialistSandbox({ builder: 'builtin:rust', sandbox: own })).toBe(own);
    expect(specialistSandbox({ builder: 'builtin:research', sandbox: own })).toBe(own);
  });
});
