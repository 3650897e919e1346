/**
 * Trace and span ids derived from a run (SPEC §21): the same run gives the same ids on every
 * export, so a backend that receives it twice stores one trace. FNV-1a 64 under two offsets:
 * not a secret, only a spread.
 */
const PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;
const OFFSET_A = 0xcbf29ce484222325n;
const OFFSET_B = 0x84222325cbf29ce4n;

function fnv64(text: string, offset: bigint): bigint {
  let hash = offset;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * PRIME) & MASK;
  }
  // An all-zero id is invalid in OpenTelemetry.
  return hash === 0n ? 1n : hash;
}

function hex(value: bigint): string {
  return value.toString(16).padStart(16, '0');
}

/** The run's trace id: 32 hex digits. */
export function traceIdOf(runId: string): string {
  return hex(fnv64(runId, OFFSET_A)) + hex(fnv64(runId, OFFSET_B));
}

/** The span id of the span a run's event at `seq` opens: 16 hex digits. */
export function spanIdOf(runId: string, seq: number): string {
  return hex(fnv64(`${runId}#${seq}`, OFFSET_A));
}
