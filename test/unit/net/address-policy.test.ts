import { hostPortOf, parseAllowHosts } from '../../../src/addresses.js';
import { isPublicAddress } from '../../../src/net/address-policy.js';

describe('address policy', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808', // NAT64 of 8.8.8.8, what a DNS64 resolver hands out
    '2002:808:808::1', // 6to4 of 8.8.8.8
  ])('allows the public address %s', (a) => {
    expect(isPublicAddress(a)).toBe(true);
  });

  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback range'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['192.0.0.170', 'IETF protocol assignments'],
    ['192.0.2.1', 'TEST-NET-1'],
    ['198.51.100.7', 'TEST-NET-2'],
    ['203.0.113.9', 'TEST-NET-3'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified v6'],
    ['::1', 'loopback v6'],
    ['fc00::1', 'unique-local'],
    ['fd00::1', 'unique-local'],
    ['fd00:ec2::254', 'AWS metadata v6'],
    ['fe80::1', 'link-local v6'],
    ['fe80::1%eth0', 'link-local v6 with zone'],
    ['ff02::1', 'multicast v6'],
    ['2001:db8::1', 'documentation v6'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::8.8.8.8', 'IPv4-compatible (deprecated even when public)'],
    ['::808:808', 'IPv4-compatible, hex form'],
    ['0x08.8.8.8', 'non-canonical IPv4 spelling (fail closed)'],
    ['134744072', 'integer IPv4 spelling (fail closed)'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of metadata'],
    ['64:ff9b:1::808:808', 'local-use NAT64 prefix'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:a9fe:a9fe::', '6to4 of metadata'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo whose client is 127.0.0.1'],
    ['2001:0:808:808:8000:63bf:f5ff:fffe', 'Teredo whose client is 10.0.0.1'],
    ['not an ip', 'garbage'],
    ['', 'empty'],
  ])('refuses %s (%s)', (a) => {
    expect(isPublicAddress(a)).toBe(false);
  });

  it('names a URL by host:port the way FETCH_ALLOW_HOSTS does', () => {
    expect(hostPortOf(new URL('http://Media.Example/x'))).toBe('media.example:80');
    expect(hostPortOf(new URL('https://media.example/x'))).toBe('media.example:443');
    expect(hostPortOf(new URL('http://media.example:80/x'))).toBe('media.example:80');
    expect(hostPortOf(new URL('http://[::1]:8080/x'))).toBe('[::1]:8080');
  });

  it('normalises allow-list entries to the same keys', () => {
    const keys = parseAllowHosts([' Media.Local:8080 ', '[0:0::1]:9000', '127.0.0.1:80', '', 'localhost:443']);
    expect([...keys].sort()).toEqual(['127.0.0.1:80', '[::1]:9000', 'localhost:443', 'media.local:8080']);
    expect(keys.has(hostPortOf(new URL('http://127.0.0.1/')))).toBe(true);
    expect(keys.has(hostPortOf(new URL('https://localhost/')))).toBe(true);
    expect(keys.has(hostPortOf(new URL('http://localhost/')))).toBe(false);
  });

  it.each(['media.local', 'media.local:', 'media.local:http', ':8080', '[::1:8080', 'a b:80', 'x:70000'])(
    'rejects the allow-list entry %p',
    (entry) => {
      expect(() => parseAllowHosts([entry])).toThrow(/not host:port/);
    },
  );
});
