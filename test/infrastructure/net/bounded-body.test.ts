import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { collectBoundedBody, isSupportedEncoding } from '../../../src/infrastructure/net/bounded-body.ts';

const never = new AbortController().signal;

describe('collectBoundedBody', () => {
  it('returns a small identity body whole', async () => {
    const body = await collectBoundedBody(
      Readable.from([Buffer.from('ab'), Buffer.from('cd')]),
      '',
      10,
      never,
    );
    expect(new TextDecoder().decode(body.bytes)).toBe('abcd');
    expect(body.truncated).toBe(false);
  });

  it('stops at the limit after decompression', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024));
    const body = await collectBoundedBody(Readable.from([bomb]), 'gzip', 1000, never);
    expect(body).toMatchObject({ truncated: true });
    expect(body.bytes.length).toBe(1000);
  });

  it('also bounds the raw bytes, so endless empty deflate blocks cannot run forever', async () => {
    // A non-final stored block of length 0: valid deflate that decodes to nothing, forever.
    const emptyBlock = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);
    function* endless(): Generator<Buffer> {
      for (;;) yield Buffer.concat(new Array(1000).fill(emptyBlock));
    }
    const body = await collectBoundedBody(Readable.from(endless()), 'deflate', 64 * 1024, never);
    expect(body).toMatchObject({ truncated: true });
    expect(body.bytes.length).toBe(0);
  });

  it('reports a corrupt compressed body as a tool error', async () => {
    const promise = collectBoundedBody(Readable.from([Buffer.from('not gzip at all')]), 'gzip', 1000, never);
    await expect(promise).rejects.toThrow(/could not be decompressed/);
  });

  it('knows which encodings it can decode', () => {
    expect(['gzip', 'x-gzip', 'deflate', 'br', 'identity', '', ' GZIP '].every(isSupportedEncoding)).toBe(
      true,
    );
    expect(isSupportedEncoding('compress')).toBe(false);
    expect(isSupportedEncoding('gzip, br')).toBe(false);
  });
});
