import { describe, expect, it } from 'vitest';
import { classifyAddress, parseIpv4, parseIpv6 } from '../../../src/infrastructure/net/ip-address.ts';

describe('parseIpv4 and parseIpv6', () => {
  it('parses dotted quads and refuses anything looser', () => {
    expect(parseIpv4('192.168.1.20')).toEqual([192, 168, 1, 20]);
    for (const odd of ['127.1', '0177.0.0.1', '0x7f.0.0.1', '2130706433', '256.0.0.1', '1.2.3.4.5', '']) {
      expect(parseIpv4(odd)).toBeUndefined();
    }
  });

  it('parses compressed IPv6, brackets, zone ids and an IPv4 tail', () => {
    expect(parseIpv6('::1')?.[15]).toBe(1);
    expect(parseIpv6('[fe80::1%eth0]')?.slice(0, 2)).toEqual([0xfe, 0x80]);
    expect(parseIpv6('::ffff:127.0.0.1')?.slice(10)).toEqual([0xff, 0xff, 127, 0, 0, 1]);
    expect(parseIpv6('1:2:3:4:5:6:7:8')).toHaveLength(16);
    for (const bad of ['1::2::3', '1:2:3:4:5:6:7:8:9', '12345::', 'example.com', '1:2:3']) {
      expect(parseIpv6(bad)).toBeUndefined();
    }
  });
});

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.2', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['100.64.0.1', 'carrier_grade_nat'],
    ['100.127.255.254', 'carrier_grade_nat'],
    ['169.254.0.1', 'link_local'],
    ['169.254.169.254', 'cloud_metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link_local'],
    ['febf::1', 'link_local'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456::1', 'unique_local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'cloud_metadata'],
    ['::ffff:10.1.2.3', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'cloud_metadata'],
    ['64:ff9b:1::1', 'nat64_local'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
  ])('classifies %s as %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '64:ff9b::808:808'])(
    'treats %s as public',
    (address) => {
      expect(classifyAddress(address)).toBeUndefined();
    },
  );
});
