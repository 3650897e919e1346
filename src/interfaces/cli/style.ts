import type { Environment } from '../../config/env.ts';
import type { OutputStream } from './io.ts';

/** Terminal styling that honours NO_COLOR and plain pipes. */
export interface Style {
  dim(text: string): string;
  bold(text: string): string;
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/** Colours only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function styleFor(stream: OutputStream, env: Environment): Style {
  const on =
    Boolean(stream.isTTY) && (env.NO_COLOR === undefined || env.NO_COLOR === '') && env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (text: string) =>
    on ? `\u001b[${open}m${text}\u001b[${close}m` : text;
  return {
    dim: wrap(2, 22),
    bold: wrap(1, 22),
    green: wrap(32, 39),
    red: wrap(31, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}
