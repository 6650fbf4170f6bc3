import { isPublicAddress, hostPortOf } from '../../../src/net/address-policy.js';

describe('address policy', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
  ])('allows the public address %s', (a) => {
    expect(isPublicAddress(a)).toBe(true);
  });

  it.each([
    ['0.0.0.0', 'unspecified'],
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
    ['198.18.0.1', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified v6'],
    ['::1', 'loopback v6'],
    ['fc00::1', 'unique-local'],
    ['fd00::1', 'unique-local'],
    ['fd00:ec2::254', 'AWS metadata v6'],
    ['fe80::1', 'link-local v6'],
    ['ff02::1', 'multicast v6'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:a9fe:a9fe::', '6to4 of metadata'],
    ['not an ip', 'garbage'],
  ])('refuses %s (%s)', (a) => {
    expect(isPublicAddress(a)).toBe(false);
  });

  it('names a URL by host:port the way FETCH_ALLOW_HOSTS does', () => {
    expect(hostPortOf(new URL('http://Media.Example/x'))).toBe('media.example:80');
    expect(hostPortOf(new URL('https://media.example/x'))).toBe('media.example:443');
    expect(hostPortOf(new URL('http://[::1]:8080/x'))).toBe('[::1]:8080');
  });
});
