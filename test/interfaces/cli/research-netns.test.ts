import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { ROOT } from '../../support/fabric-cli.ts';

/**
 * Routes of the namespace, one per way a network fails: no route at all (ENETUNREACH), an
 * `unreachable` route (EHOSTUNREACH), a `blackhole` route (EINVAL), a `prohibit` route (EACCES),
 * and a device that swallows every packet (no answer: the fetch times out). Nothing leaves the
 * namespace: it has no other interface.
 */
const SETUP = [
  'mount --bind "$HOSTS" /etc/hosts',
  'ip link set lo up',
  'ip route add unreachable 198.51.100.0/24',
  'ip route add blackhole 203.0.113.0/24',
  'ip route add prohibit 192.0.2.128/25',
  'ip tuntap add fabsink mode tun',
  'ip link set fabsink up',
  'ip route add 192.0.2.0/25 dev fabsink',
].join(' && ');

/** Names resolve through the namespace's /etc/hosts: a resolved name connects by a pinned lookup. */
const HOSTS = [
  '127.0.0.1 localhost',
  '10.255.0.1 no-route.fabric.test',
  '198.51.100.7 unreachable.fabric.test',
  '203.0.113.9 blackhole.fabric.test',
  '192.0.2.200 prohibited.fabric.test',
  '192.0.2.5 silent.fabric.test',
].join('\n');

/** Each target with what its tool error must say. */
const TARGETS: readonly (readonly [string, RegExp])[] = [
  ['http://no-route.fabric.test/', /\(10\.255\.0\.1\): the network is unreachable.*ENETUNREACH.*Try another/],
  ['http://10.255.0.1/', /network is unreachable from here \(ENETUNREACH\)/],
  ['http://unreachable.fabric.test/page', /\(198\.51\.100\.7\): the host is unreachable.*EHOSTUNREACH/],
  ['https://blackhole.fabric.test/', /\(203\.0\.113\.9\).*\(EINVAL\)/],
  ['http://prohibited.fabric.test/', /\(192\.0\.2\.200\).*prohibited \(EACCES\)/],
  ['http://silent.fabric.test/', /took longer than 1500 ms/],
  ['http://[2001:db8::1]/', /\(2001:db8::1\).*\((ENETUNREACH|EADDRNOTAVAIL)\)/],
];

let dir: string;
let unavailable: string | undefined;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fabric-netns-'));
  await writeFile(join(dir, 'hosts'), `${HOSTS}\n`);
  const probe = await execa('unshare', ['-rnm', 'sh', '-c', SETUP], {
    reject: false,
    env: { HOSTS: join(dir, 'hosts') },
  });
  if (probe.exitCode !== 0) {
    unavailable = `unshare -rnm could not make a network namespace here (${probe.stderr || probe.shortMessage})`;
    console.warn(`SKIPPED: the unroutable-network test of fetch_url: ${unavailable}.`);
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('fabric run --specialist research in a network where nothing is routable', () => {
  it('answers every unreachable, black-holed, prohibited or silent address with a tool error and writes run_end', async (test) => {
    if (unavailable !== undefined) return test.skip(unavailable);
    const driver = join(ROOT, 'test/support/netns-research-run.ts');
    const urls = TARGETS.map(([url]) => url);
    const child = await execa(
      'unshare',
      [
        '-rnm',
        'sh',
        '-c',
        `${SETUP} && exec "$0" --import tsx "$1" "$2"`,
        process.execPath,
        driver,
        JSON.stringify(urls),
      ],
      {
        reject: false,
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/tmp',
          HOSTS: join(dir, 'hosts'),
        },
        extendEnv: false,
      },
    );
    expect(child.exitCode, child.stderr).toBe(0);
    const out = JSON.parse(child.stdout) as { exitCode: number; stderr: string; events: RunEvent[] };
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.stderr).not.toContain("Unhandled 'error' event");
    const errors = out.events.flatMap((event) => (event.kind === 'tool_error' ? [event.error] : []));
    expect(errors).toHaveLength(TARGETS.length);
    TARGETS.forEach(([url, expected], index) => {
      expect(errors[index], url).toMatch(expected);
    });
    expect(out.events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
  });
});
