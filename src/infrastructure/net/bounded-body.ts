/**
 * Reads a response body with a hard size bound, decompressing gzip, deflate and br on the way.
 * The bound applies to the decompressed bytes (a 10 kB gzip bomb that expands to gigabytes stops
 * at the limit) and to the raw bytes (empty deflate blocks can stream forever without output).
 */
import type { Readable, Transform } from 'node:stream';
import {
  createBrotliDecompress,
  createGunzip,
  createInflate,
  createInflateRaw,
  constants as zlibConstants,
} from 'node:zlib';
import { ToolError } from '../../domain/errors.ts';

/** A body cut at the limit when `truncated` is set. */
export interface BoundedBody {
  readonly bytes: Uint8Array;
  readonly truncated: boolean;
}

const SUPPORTED = new Set(['', 'identity', 'gzip', 'x-gzip', 'deflate', 'br']);

/** True when `fetch_url` can decode this Content-Encoding. */
export function isSupportedEncoding(encoding: string): boolean {
  return SUPPORTED.has(encoding.trim().toLowerCase());
}

/** Collects at most `maxBytes` of decoded body from `source`, then stops reading it. */
export function collectBoundedBody(
  source: Readable,
  contentEncoding: string,
  maxBytes: number,
  signal: AbortSignal,
): Promise<BoundedBody> {
  const encoding = contentEncoding.trim().toLowerCase();
  if (!isSupportedEncoding(encoding)) {
    source.destroy();
    return Promise.reject(new ToolError(`The server sent an unsupported Content-Encoding "${encoding}".`));
  }
  const compressed = encoding !== '' && encoding !== 'identity';
  return new Promise<BoundedBody>((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let rawSize = 0;
    let done = false;
    let decoder: Transform | undefined;
    let rawLimitReached = false;

    const stop = (): void => {
      done = true;
      signal.removeEventListener('abort', onAbort);
      source.destroy();
      decoder?.destroy();
    };
    const finish = (truncated: boolean): void => {
      if (done) return;
      stop();
      resolve({ bytes: Buffer.concat(chunks, size), truncated });
    };
    const fail = (error: unknown): void => {
      if (done) return;
      stop();
      reject(error);
    };
    const take = (chunk: Uint8Array): void => {
      if (done) return;
      const room = maxBytes - size;
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      size += Math.min(chunk.length, room);
      if (chunk.length > room) finish(true);
    };
    function onAbort(): void {
      fail(new ToolError('The response took too long or the run was cancelled.', { cause: signal.reason }));
    }
    if (signal.aborted) return onAbort();
    if (source.errored !== null || source.destroyed) {
      return fail(
        new ToolError('The connection failed before the body was read.', { cause: source.errored }),
      );
    }
    signal.addEventListener('abort', onAbort, { once: true });

    source.on('error', (error) => {
      // Destroying the source ourselves (raw limit reached) is not a connection failure.
      if (!rawLimitReached)
        fail(new ToolError('The connection failed while reading the body.', { cause: error }));
    });
    source.on('end', () => (decoder === undefined ? finish(false) : decoder.end()));
    source.on('data', (chunk: Buffer) => {
      if (done || rawLimitReached) return;
      if (!compressed) return take(chunk);
      decoder ??= createDecoder(encoding, chunk, take, () => finish(rawLimitReached), fail);
      const room = maxBytes - rawSize;
      rawSize += chunk.length;
      if (chunk.length <= room) {
        decoder.write(chunk);
        return;
      }
      // Decode what fits, then stop: the decoder flushes what it has instead of failing on the cut.
      rawLimitReached = true;
      source.destroy();
      decoder.end(chunk.subarray(0, room));
    });
  });
}

function createDecoder(
  encoding: string,
  firstChunk: Uint8Array,
  onData: (chunk: Uint8Array) => void,
  onEnd: () => void,
  onError: (error: unknown) => void,
): Transform {
  // Sync flush at the end: a body cut at the raw limit yields what it decodes to, not an error.
  const flush = { finishFlush: zlibConstants.Z_SYNC_FLUSH };
  const decoder =
    encoding === 'br'
      ? createBrotliDecompress({ finishFlush: zlibConstants.BROTLI_OPERATION_FLUSH })
      : encoding === 'deflate'
        ? // "deflate" should be zlib-wrapped, but many servers send raw deflate; the zlib header's
          // low nibble is always 8 (the deflate method), which raw data rarely starts with.
          ((firstChunk[0] ?? 0) & 0x0f) === 8
          ? createInflate(flush)
          : createInflateRaw(flush)
        : createGunzip(flush);
  decoder.on('data', onData);
  decoder.on('end', onEnd);
  decoder.on('error', (error) =>
    onError(new ToolError(`The ${encoding} body could not be decompressed.`, { cause: error })),
  );
  return decoder;
}
