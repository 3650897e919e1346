import { FabricError } from '../../domain/errors.ts';
import type { OutputStream } from './io.ts';

/** How `serve`, `worker` and `daemon` write their log (SPEC §21): text for a person, or JSON lines. */
export type LogFormat = 'text' | 'json';
export type LogLevel = 'info' | 'warn' | 'error';

/** What a line is about, as fields of its JSON object (SPEC §21: run id / worker id where there is one). */
export interface LogFields {
  readonly run_id?: string | undefined;
  readonly worker_id?: string | undefined;
  /** A failure's error code (docs/errors.md). */
  readonly code?: string | undefined;
}

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** The same log, with these fields on every line (the worker's id once it has one). */
  with(fields: LogFields): Logger;
  readonly format: LogFormat;
}

export interface LoggerOptions {
  /** The command that logs: `fabric <command>: …` in text, `"command"` in JSON. */
  readonly command: string;
  readonly format: LogFormat;
  readonly stream: OutputStream;
  readonly now?: () => Date;
}

/**
 * The log of a long-running command. Text: `fabric serve: listening on …`, as before. JSON: one
 * object a line, `{ time, level, msg, command, run_id?, worker_id? }`, for a log pipeline.
 */
export function createLogger(options: LoggerOptions, base: LogFields = {}): Logger {
  const now = options.now ?? (() => new Date());
  const write = (level: LogLevel, msg: string, fields: LogFields = {}) => {
    if (options.format === 'text') {
      options.stream.write(`fabric ${options.command}: ${msg}\n`);
      return;
    }
    const line: Record<string, string> = { time: now().toISOString(), level, msg, command: options.command };
    for (const [key, value] of Object.entries({ ...base, ...fields }))
      if (typeof value === 'string') line[key] = value;
    options.stream.write(`${JSON.stringify(line)}\n`);
  };
  return {
    format: options.format,
    info: (msg, fields) => write('info', msg, fields),
    warn: (msg, fields) => write('warn', msg, fields),
    error: (msg, fields) => write('error', msg, fields),
    with: (fields) => createLogger(options, { ...base, ...fields }),
  };
}

/** `--log-format` over `log_format` in the config; a bad value is a usage error that says what to write. */
export function logFormatOf(flag: string | undefined, configured: LogFormat): LogFormat {
  if (flag === undefined) return configured;
  if (flag === 'text' || flag === 'json') return flag;
  throw new FabricError('usage', `--log-format takes text or json, not "${flag}".`);
}
