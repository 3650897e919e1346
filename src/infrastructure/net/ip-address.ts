/**
 * IP address parsing and classification for the SSRF guard. Pure code, no I/O, so it runs the
 * same on Node and Deno and can be tested address by address.
 */

/** Why an address may not be fetched. `undefined` from `classifyAddress` means public. */
export type AddressClass =
  | 'loopback'
  | 'private'
  | 'carrier_grade_nat'
  | 'link_local'
  | 'cloud_metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'unique_local'
  | 'nat64_local';

/**
 * Parses a strict dotted-quad IPv4 address (`127.0.0.1`). Odd encodings (`0x7f.1`, `2130706433`)
 * are deliberately not accepted here: URLs are normalised by the WHATWG parser before they
 * reach us, and resolver output is always dotted-quad.
 */
export function parseIpv4(text: string): readonly number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes.push(value);
  }
  return bytes;
}

/** Parses an IPv6 address (with `::`, an embedded IPv4 tail, optional brackets and zone id) into 16 bytes. */
export function parseIpv6(text: string): readonly number[] | undefined {
  let body = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = body.indexOf('%');
  if (zone !== -1) body = body.slice(0, zone);
  if (!body.includes(':')) return undefined;
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0] ?? '');
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '') : [];
  if (head === undefined || tail === undefined) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  return groups.flatMap((group) => [group >> 8, group & 0xff]);
}

/** The 16-bit groups of one side of `::`; a trailing dotted quad counts as two groups. */
function groupsOf(side: string): number[] | undefined {
  if (side === '') return [];
  const pieces = side.split(':');
  const groups: number[] = [];
  for (const [index, piece] of pieces.entries()) {
    if (index === pieces.length - 1 && piece.includes('.')) {
      const v4 = parseIpv4(piece);
      if (v4 === undefined) return undefined;
      groups.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
      continue;
    }
    if (!/^[0-9a-fA-F]{1,4}$/.test(piece)) return undefined;
    groups.push(Number.parseInt(piece, 16));
  }
  return groups;
}

/** Classifies an IPv4 or IPv6 address; `undefined` when it is public, or not an address at all. */
export function classifyAddress(address: string): AddressClass | undefined {
  const v4 = parseIpv4(address);
  if (v4 !== undefined) return classifyIpv4(v4);
  const v6 = parseIpv6(address);
  if (v6 !== undefined) return classifyIpv6(v6);
  return undefined;
}

/** True when the text is an IPv4 or IPv6 literal. */
export function isIpAddress(text: string): boolean {
  return parseIpv4(text) !== undefined || parseIpv6(text) !== undefined;
}

function classifyIpv4(bytes: readonly number[]): AddressClass | undefined {
  const [a = 0, b = 0, c = 0, d = 0] = bytes;
  if (a === 169 && b === 254 && c === 169 && d === 254) return 'cloud_metadata';
  if (a === 255 && b === 255 && c === 255 && d === 255) return 'broadcast';
  if (a === 0 && b === 0 && c === 0 && d === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && b >= 64 && b <= 127) return 'carrier_grade_nat';
  if (a === 169 && b === 254) return 'link_local';
  if (a >= 224 && a <= 239) return 'multicast';
  // 0/8 "this network", 192.0.0/24 protocol assignments, the TEST-NETs, 198.18/15 benchmarking,
  // 240/4 future use: none of them is a web server anyone should reach from here.
  if (a === 0 || a >= 240) return 'reserved';
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return 'reserved';
  if (a === 198 && (b === 18 || b === 19)) return 'reserved';
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return 'reserved';
  return undefined;
}

function classifyIpv6(bytes: readonly number[]): AddressClass | undefined {
  const at = (index: number): number => bytes[index] ?? 0;
  const zeroUntil = (end: number): boolean => bytes.slice(0, end).every((byte) => byte === 0);
  const embeddedV4 = (start: number): readonly number[] => bytes.slice(start, start + 4);
  if (zeroUntil(16)) return 'unspecified';
  if (zeroUntil(15) && at(15) === 1) return 'loopback';
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (the deprecated "compatible" form) carry an IPv4 address.
  if (zeroUntil(10) && at(10) === 0xff && at(11) === 0xff) return classifyIpv4(embeddedV4(12));
  if (zeroUntil(12)) return classifyIpv4(embeddedV4(12));
  // NAT64: 64:ff9b::/96 reaches the embedded IPv4 address; 64:ff9b:1::/48 is for local use.
  if (at(0) === 0x00 && at(1) === 0x64 && at(2) === 0xff && at(3) === 0x9b) {
    if (bytes.slice(4, 12).every((byte) => byte === 0)) return classifyIpv4(embeddedV4(12));
    if (at(4) === 0 && at(5) === 1) return 'nat64_local';
  }
  // 6to4 (2002::/16) tunnels to the IPv4 address in bytes 2..5.
  if (at(0) === 0x20 && at(1) === 0x02) return classifyIpv4(embeddedV4(2));
  if (at(0) === 0xfe && (at(1) & 0xc0) === 0x80) return 'link_local';
  if (at(0) === 0xfe && (at(1) & 0xc0) === 0xc0) return 'reserved'; // deprecated site-local
  if ((at(0) & 0xfe) === 0xfc) return 'unique_local';
  if (at(0) === 0xff) return 'multicast';
  if (at(0) === 0x20 && at(1) === 0x01 && at(2) === 0x0d && at(3) === 0xb8) return 'reserved'; // documentation
  return undefined;
}
