/**
 * `sha256:<hex>` of a call's arguments as the model wrote them: `tool_started` names what was
 * about to run without copying the arguments again (SPEC §18). Web Crypto, on Node and Deno.
 */
export async function argumentsDigest(text: string): Promise<string> {
  const bytes = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return `sha256:${[...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}
