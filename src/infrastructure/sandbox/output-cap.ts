/**
 * Keeps the first and last bytes of a stream and counts the rest: a compiler's first error and
 * its final summary are what matter, and a command printing gigabytes must not fill memory.
 */
export class HeadTailBuffer {
  private readonly half: number;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  /** Every byte seen, kept or not. */
  total = 0;

  constructor(limitBytes: number) {
    this.half = Math.max(1, Math.floor(limitBytes / 2));
  }

  /** Adds a chunk, keeping at most the limit in memory. */
  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headBytes < this.half) {
      const take = chunk.subarray(0, this.half - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (chunk.length === 0) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    if (this.tailBytes > this.half * 2) this.compactTail();
  }

  /** True when some bytes were dropped from the middle. */
  get truncated(): boolean {
    return this.total > this.headBytes + Math.min(this.tailBytes, this.half);
  }

  /** The kept text, with a marker saying how much was left out. */
  text(): string {
    this.compactTail();
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    const omitted = this.total - this.headBytes - this.tailBytes;
    if (omitted <= 0) return head + tail;
    return `${head}\n… [${omitted} bytes of output omitted] …\n${tail}`;
  }

  private compactTail(): void {
    const all = Buffer.concat(this.tail);
    const kept = all.subarray(Math.max(0, all.length - this.half));
    this.tail = [Buffer.from(kept)];
    this.tailBytes = kept.length;
  }
}
