import { createServer, type Server, type Socket, connect } from 'node:net';

/**
 * A TCP proxy that misbehaves on purpose, for tests of clients that must survive their server
 * going away: it forwards between the client and a real server until a fault fires at an exact
 * point of the conversation, then cuts (destroys both sides of the connection carrying that
 * point) or stalls (stops forwarding everything, keeps every socket open). A seeded PRNG picks
 * the point, so a failing seed reproduces its cut.
 */

/** `to_server`: what the client sends; `to_client`: what the server answers. */
export type Direction = 'to_server' | 'to_client';

/**
 * Where the conversation breaks. Offsets count over the proxy's whole life in one direction,
 * across its connections, from 0: `at` bytes (or chunks) are forwarded, then the fault fires.
 */
export type Fault =
  | { readonly kind: 'cut_at_byte'; readonly direction: Direction; readonly at: number }
  | { readonly kind: 'cut_at_chunk'; readonly direction: Direction; readonly at: number }
  | { readonly kind: 'stall_at_byte'; readonly direction: Direction; readonly at: number };

/** Bytes and chunks (`data` events) seen so far in each direction. */
export type Traffic = Record<Direction, { bytes: number; chunks: number }>;

/** A running proxy. */
export interface TcpProxy {
  readonly port: number;
  /** What went through so far, faults aside. */
  readonly traffic: Traffic;
  /** Whether the armed fault has fired. */
  readonly fired: boolean;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Arms a fault (replacing any other) at an offset counted from now. */
  arm(fault: Fault): void;
  /** Disarms, and resumes a stall: held data is delivered to sockets still open. */
  heal(): void;
  /** Cuts every connection and stops listening. */
  close(): Promise<void>;
}

/** Options of `startTcpProxy`. */
export interface TcpProxyOptions {
  readonly target: { readonly host: string; readonly port: number };
  /** Where to listen; a free port by default. Given, a test can bring a server back where it was. */
  readonly port?: number;
  readonly fault?: Fault;
  /** Told when the fault fires (the test knows what it was doing then). */
  readonly onFault?: (fault: Fault) => void;
  /** Every forwarded chunk, for tests that must know where a protocol message ends. */
  readonly onChunk?: (direction: Direction, connection: number, chunk: Buffer) => void;
}

interface Pipe {
  readonly id: number;
  readonly client: Socket;
  readonly upstream: Socket;
  /** Set once this connection is being cut: nothing more goes through. */
  dying: boolean;
}

/** Starts a proxy on a free loopback port. */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const pipes = new Set<Pipe>();
  const traffic: Traffic = { to_server: { bytes: 0, chunks: 0 }, to_client: { bytes: 0, chunks: 0 } };
  // Offsets of the armed fault are relative to the traffic at arming time.
  let fault: { spec: Fault; base: Traffic } | null = null;
  let fired = false;
  let stalled = false;
  const held: { pipe: Pipe; direction: Direction; chunk: Buffer }[] = [];
  let accepted = 0;

  const arm = (spec: Fault): void => {
    fault = { spec, base: structuredClone(traffic) };
    fired = false;
  };
  if (options.fault !== undefined) arm(options.fault);

  const cut = (pipe: Pipe): void => {
    pipe.dying = true;
    pipe.client.destroy();
    pipe.upstream.destroy();
  };

  const deliver = (pipe: Pipe, direction: Direction, chunk: Buffer, then?: () => void): void => {
    const target = direction === 'to_server' ? pipe.upstream : pipe.client;
    if (target.destroyed || pipe.dying) return;
    options.onChunk?.(direction, pipe.id, chunk);
    if (then === undefined) target.write(chunk);
    // The callback runs once the bytes are handed to the kernel: the cut comes after them.
    else target.write(chunk, then);
  };

  const onData = (pipe: Pipe, direction: Direction, chunk: Buffer): void => {
    if (pipe.dying) return;
    if (stalled) {
      held.push({ pipe, direction, chunk });
      return;
    }
    const count = traffic[direction];
    const before = { bytes: count.bytes, chunks: count.chunks };
    count.bytes += chunk.length;
    count.chunks += 1;
    const armed = fault;
    if (armed === null || fired || armed.spec.direction !== direction) {
      deliver(pipe, direction, chunk);
      return;
    }
    const { spec, base } = armed;
    const offset =
      spec.kind === 'cut_at_chunk'
        ? before.chunks - base[direction].chunks
        : before.bytes - base[direction].bytes;
    const size = spec.kind === 'cut_at_chunk' ? 1 : chunk.length;
    if (offset + size <= spec.at) {
      deliver(pipe, direction, chunk);
      return;
    }
    // This chunk holds the fault point: forward what comes before it, then break.
    fired = true;
    const keep = spec.kind === 'cut_at_chunk' ? 0 : Math.max(0, spec.at - offset);
    const head = chunk.subarray(0, keep);
    const rest = chunk.subarray(keep);
    options.onFault?.(spec);
    if (spec.kind === 'stall_at_byte') {
      if (head.length > 0) deliver(pipe, direction, head);
      stalled = true;
      if (rest.length > 0) held.push({ pipe, direction, chunk: rest });
      return;
    }
    if (head.length === 0) cut(pipe);
    else deliver(pipe, direction, head, () => cut(pipe));
    pipe.dying = true;
  };

  const server: Server = createServer((client) => {
    accepted += 1;
    const upstream = connect(options.target.port, options.target.host);
    const pipe: Pipe = { id: accepted, client, upstream, dying: false };
    pipes.add(pipe);
    for (const socket of [client, upstream]) {
      socket.on('error', () => {});
      // One side gone (a cut, or the client hanging up): the other goes too, stalled or not.
      socket.on('close', () => {
        pipes.delete(pipe);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => onData(pipe, 'to_server', chunk));
    upstream.on('data', (chunk: Buffer) => onData(pipe, 'to_client', chunk));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    port,
    get traffic() {
      return structuredClone(traffic);
    },
    get fired() {
      return fired;
    },
    get connections() {
      return accepted;
    },
    arm,
    heal() {
      fault = null;
      stalled = false;
      for (const { pipe, direction, chunk } of held.splice(0)) onData(pipe, direction, chunk);
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const pipe of pipes) cut(pipe);
      await closed;
    },
  };
}

/** A small, fast, seedable PRNG (mulberry32): the same seed gives the same sequence. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * A fault somewhere in `[from, to)` of a conversation measured beforehand (a healthy run of the
 * same scenario through a proxy): the seed picks the kind (mostly cuts by byte, some by chunk,
 * some stalls), the direction, and the offset.
 */
export function seededFault(seed: number, from: Traffic, to: Traffic): Fault {
  const random = seededRandom(seed);
  const roll = random();
  const kind = roll < 0.65 ? 'cut_at_byte' : roll < 0.85 ? 'cut_at_chunk' : 'stall_at_byte';
  const direction: Direction = random() < 0.5 ? 'to_server' : 'to_client';
  const unit = kind === 'cut_at_chunk' ? 'chunks' : 'bytes';
  const start = from[direction][unit];
  const span = Math.max(1, to[direction][unit] - start);
  return { kind, direction, at: start + Math.floor(random() * span) };
}
