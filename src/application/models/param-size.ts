/**
 * Parses a parameter-size string into billions: `"8.0B"` is 8, `"566.70M"` is 0.5667, `"137M"` is
 * 0.137, `"8x7B"` is 56, `"26B-A4B"` (LM Studio, total-active) is 26. Anything else is unknown.
 */
export function parseParamSize(text: string | null | undefined): number | undefined {
  if (!text) return undefined;
  const match = /^\s*(?:(\d+)\s*x\s*)?(\d+(?:\.\d+)?)\s*([KMBT])\b/i.exec(text);
  if (!match) return undefined;
  const experts = match[1] === undefined ? 1 : Number(match[1]);
  const value = Number(match[2]);
  const unit = match[3]!.toUpperCase();
  const scale = unit === 'K' ? 1e-6 : unit === 'M' ? 1e-3 : unit === 'B' ? 1 : 1e3;
  return experts * value * scale;
}
