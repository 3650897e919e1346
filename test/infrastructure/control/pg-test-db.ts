import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket, connect } from 'node:net';
import postgres from 'postgres';

/** The test server: 127.0.0.1:5432, user postgres, trust auth (override with FABRIC_TEST_PG_URL). */
export const PG_SERVER_URL = process.env.FABRIC_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** A throwaway database on the real server, dropped by `drop()`. */
export async function createTestDatabase(): Promise<{ dsn: string; name: string; drop(): Promise<void> }> {
  const name = `fabric_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = postgres(`${PG_SERVER_URL}/test`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  return {
    name,
    dsn: `${PG_SERVER_URL}/${name}`,
    async drop() {
      try {
        await admin.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await admin.end({ timeout: 2 });
      }
    },
  };
}

/** A port on loopback where nothing listens. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/**
 * A TCP proxy to the Postgres server. `close()` cuts every connection and stops listening:
 * to the client, the database has gone away mid-run (the real server keeps running).
 */
export async function startPgProxy(target: URL): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
  });
  const port = await listen(server);
  return {
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** A server that accepts connections and never answers: a database that hangs. */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  const port = await listen(server);
  return {
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** A server that accepts every connection and closes it at once: a database that keeps hanging up. */
export async function startHangUpServer(): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.destroy();
  });
  const port = await listen(server);
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
