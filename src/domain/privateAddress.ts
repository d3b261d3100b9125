import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook may not reach unless KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE=on: this host, private networks,
 * link-local (cloud metadata services live at 169.254.169.254), carrier-grade NAT, multicast and reserved
 * ranges. Without the rule an admin key could make the server probe the network it sits in.
 */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  // IPv4-compatible (::a.b.c.d, which covers :: and ::1), NAT64 and 6to4: each can carry a private IPv4 address.
  ['::', 96],
  ['64:ff9b::', 96],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');
}

/** True for an IP address (v4 or v6, IPv4-mapped included) outside the public internet. */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return NOT_PUBLIC.check(mapped[1] as string, 'ipv4');
  const family = isIP(address);
  if (family === 4) return NOT_PUBLIC.check(address, 'ipv4');
  if (family === 6) return NOT_PUBLIC.check(address, 'ipv6');
  return false;
}
