import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which IP addresses an import may connect to. The rule is an allowlist on the
 * normalised address, so a new spelling of a private address cannot slip
 * through a list of forbidden prefixes:
 *
 * 1. parse (standard notations only; a zone id such as `%eth0` is dropped);
 * 2. an IPv6 address that carries an IPv4 address reaching that host is
 *    replaced by it: IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
 *    `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`
 *    and 6to4 `2002:AABB:CCDD::/48`;
 * 3. IPv4 is allowed only in ipaddr.js's `unicast` range (not loopback,
 *    private, CGNAT, link-local, multicast, broadcast, unspecified, reserved,
 *    documentation, benchmarking, ...); IPv6 only in global unicast `2000::/3`
 *    and not in a special range inside it (Teredo, documentation, ORCHID,
 *    local-use NAT64 `64:ff9b:1::/48` lies outside `2000::/3` anyway).
 */

/** What the policy says about one address, and what it judged (for logs). */
export interface AddressVerdict {
  allowed: boolean;
  /** The normalised address that was judged (an IPv4 address for the embedding IPv6 forms). */
  normalised: string;
  /** ipaddr.js's range name, or `invalid` / `not-global` */
  range: string;
}

const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number];

function v4FromWords(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/** The IPv4 address an IPv6 address stands for, when it embeds one. */
function embeddedV4(a: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = a.parts;
  if (a.isIPv4MappedAddress()) return a.toIPv4Address();
  const range = a.range();
  if (range === 'rfc6145') return v4FromWords(p[6]!, p[7]!);
  if (a.match(NAT64_WELL_KNOWN)) return v4FromWords(p[6]!, p[7]!);
  if (range === '6to4') return v4FromWords(p[1]!, p[2]!);
  // IPv4-compatible (deprecated, RFC 4291): 96 zero bits, then the IPv4 address; '::' and '::1' stay themselves
  // (IPv6's unspecified and loopback addresses, which is what a socket reaches with them)
  if (p.slice(0, 6).every((w) => w === 0) && !(p[6] === 0 && p[7]! <= 1)) return v4FromWords(p[6]!, p[7]!);
  return undefined;
}

/** An address after steps 1 and 2: the address a connection reaches, and ipaddr.js's name for its range. */
export interface ClassifiedAddress {
  addr: ipaddr.IPv4 | ipaddr.IPv6;
  /** `addr` as text (an IPv4 address for the embedding IPv6 forms). */
  normalised: string;
  /** ipaddr.js's range name (`unicast`, `private`, `loopback`, `linkLocal`, `multicast`, `unspecified`, `broadcast`, ...) */
  range: string;
}

/**
 * Parses and normalises one address (steps 1 and 2 above); undefined for
 * anything that is not an IP address in a standard notation. Shared by the
 * import policy here and the print backends' confinement
 * (`src/connectors/print-backends/confinement.ts`), so both judge the same
 * spelling of an address.
 */
export function classifyAddress(raw: string): ClassifiedAddress | undefined {
  const text = raw.replace(/^\[|\]$/g, '');
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // only the standard notations (what URLs, resolvers and sockets give): ipaddr.js would also read '1.2.3' or '0x7f.1'
    if (isIP(text.replace(/%.*$/, '')) === 0) throw new Error('not an IP address');
    addr = ipaddr.parse(text);
  } catch {
    return undefined;
  }
  if (addr.kind() === 'ipv6') {
    const v4 = embeddedV4(addr as ipaddr.IPv6);
    if (v4) addr = v4;
  }
  return { addr, normalised: addr.toString(), range: addr.range() };
}

/** Judges one address (a literal from a URL, a DNS answer, or a socket's remote address). */
export function judgeAddress(raw: string): AddressVerdict {
  const c = classifyAddress(raw);
  if (!c) return { allowed: false, normalised: raw, range: 'invalid' };
  const { addr, normalised, range } = c;
  if (addr.kind() === 'ipv4') return { allowed: range === 'unicast', normalised, range };
  const global = (addr as ipaddr.IPv6).match(GLOBAL_UNICAST);
  return { allowed: global && range === 'unicast', normalised, range: global ? range : 'not-global' };
}


/**
 * A range as an operator writes it (`a.b.c.d/n`, `x::/n`, or one address),
 * normalised as addresses are: an IPv4-mapped range of 96 bits or more is
 * the IPv4 range it stands for. Throws for anything else.
 */
export function parseAddressRange(cidr: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (cidr.includes('/')) {
    if (isIP(cidr.slice(0, cidr.indexOf('/'))) === 0) throw new Error(`"${cidr}" is not a range`);
    const [addr, bits] = ipaddr.parseCIDR(cidr);
    if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) return [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96];
    return [addr, bits];
  }
  const c = classifyAddress(cidr);
  if (!c) throw new Error(`"${cidr}" is not an address or range`);
  return [c.addr, c.addr.kind() === 'ipv4' ? 32 : 128];
}
