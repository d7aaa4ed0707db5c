// Security group rule validation, as the OpenStack networking API these rules mirror has it,
// except that every verdict is a 400 naming the field where Neutron's own validator answers
// 500 (a protocol of "06", 6.5, true or ["tcp"]). Pure functions: no database, no network.
import { canonicalIpv6, isIpv4 } from "@vnm/kit";

export interface Violation {
  property: string;
  message: string;
}

/**
 * Protocol names the networking API knows and their IANA numbers; a known number is stored as
 * its name. `icmpv6` is this API's name for 58 (`ipv6-icmp` is read as it).
 */
const NUMBERS: Record<string, number> = {
  ah: 51, dccp: 33, egp: 8, esp: 50, gre: 47, icmp: 1, icmpv6: 58, igmp: 2, ipip: 4, "ipv6-encap": 41, "ipv6-frag": 44,
  "ipv6-nonxt": 59, "ipv6-opts": 60, "ipv6-route": 43, ospf: 89, pgm: 113, rsvp: 46, sctp: 132, tcp: 6, udp: 17, udplite: 136, vrrp: 112,
};
const ALIASES: Record<string, string> = { "ipv6-icmp": "icmpv6" };
const BY_NUMBER = new Map(Object.entries(NUMBERS).map(([k, v]) => [v, k]));
/** Protocols with ports: both bounds in [1, 65535]. */
const PORTED = new Set(["tcp", "udp", "dccp", "sctp", "udplite"]);
/** Protocols whose range is a type and a code, each in [0, 255]. */
const TYPED = new Set(["icmp", "icmpv6"]);
/** Protocols of IPv6 only: refused with ethertype ipv4. */
const IPV6_ONLY = new Set(["icmpv6", "ipv6-encap", "ipv6-frag", "ipv6-nonxt", "ipv6-opts", "ipv6-route"]);

/** A stored protocol (a name or digits) as its number. */
export function protocolNumber(p: string): number {
  return NUMBERS[p] ?? Number(p);
}

/**
 * The protocol a client's JSON value names: a name in any case, or an integer 0 to 255 (a
 * JSON integer or a string of its canonical digits). Known numbers read as their names.
 */
export function parseProtocol(json: string): { value: string } | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return { error: "must be a protocol name or number" };
  }
  const wrong = { error: "must be a protocol name (tcp, udp, icmp, icmpv6, sctp, gre, esp, vrrp, ..., any case) or an integer from 0 to 255" };
  if (typeof v === "string") {
    const name = ALIASES[v.toLowerCase()] ?? v.toLowerCase();
    if (Object.hasOwn(NUMBERS, name)) return { value: name };
  }
  const digits = typeof v === "number" && Number.isInteger(v) ? String(v) : typeof v === "string" && /^(0|[1-9]\d{0,2})$/.test(v) ? v : undefined;
  if (digits === undefined) return wrong;
  const n = Number(digits);
  if (n < 0 || n > 255) return wrong;
  return { value: BY_NUMBER.get(n) ?? String(n) };
}

/** The protocol as stored for its ethertype: ICMP on IPv6 is ICMPv6, as the networking API has it. */
export function protocolFor(protocol: string | undefined, ethertype: string): string | undefined {
  return ethertype === "ipv6" && protocol === "icmp" ? "icmpv6" : protocol;
}

/** 32-bit words of an address (4 for IPv6, 1 for IPv4). */
function words(ip: string, v6: boolean): number[] {
  if (!v6) return [ip.split(".").reduce((a, o) => (a << 8) | Number(o), 0) >>> 0];
  const [head, tail] = ip.includes("::") ? ip.split("::") : [ip, undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = [...h, ...Array(8 - h.length - t.length).fill("0"), ...t].map((g) => Number.parseInt(g, 16));
  return [0, 2, 4, 6].map((i) => ((groups[i]! << 16) | groups[i + 1]!) >>> 0);
}

function text(ws: number[], v6: boolean): string {
  if (!v6) return [24, 16, 8, 0].map((s) => (ws[0]! >>> s) & 255).join(".");
  const groups = ws.flatMap((w) => [(w >>> 16).toString(16), (w & 0xffff).toString(16)]);
  return canonicalIpv6(groups.join(":"))!;
}

/** The bits a mask stands for: a length, or (IPv4) a netmask such as 255.255.0.0 or a host mask such as 0.0.255.255. */
function maskBits(len: string, v6: boolean): number | undefined {
  if (/^\d{1,3}$/.test(len)) return Number(len) <= (v6 ? 128 : 32) ? Number(len) : undefined;
  if (v6 || !isIpv4(len)) return undefined;
  const w = words(len, false)[0]!;
  const nets = Array.from({ length: 33 }, (_, bits) => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0));
  const asNetmask = nets.indexOf(w);
  if (asNetmask >= 0) return asNetmask;
  const asHostmask = nets.findIndex((n) => (~n >>> 0) === w);
  return asHostmask >= 0 ? asHostmask : undefined;
}

/** An IPv4 address written short before a length ("10" of "10/8", "192.168" of "192.168/16"), in full. */
function fullIpv4(addr: string): string {
  const parts = addr.split(".");
  return parts.length < 4 && parts.every((p) => /^\d{1,3}$/.test(p)) ? [...parts, "0", "0", "0"].slice(0, 4).join(".") : addr;
}

/**
 * A prefix in CIDR form with its host bits cleared ("10.0.0.5/24" -> "10.0.0.0/24"), and its
 * family. Also read as the networking API reads them: a bare address (/32, /128), a short IPv4
 * address before a length ("10/8"), and an IPv4 netmask or host mask instead of a length.
 */
export function normalisePrefix(raw: string): { cidr: string; family: "ipv4" | "ipv6" } | undefined {
  const [given, len, extra] = raw.split("/");
  if (extra !== undefined || !given) return undefined;
  const v6 = given.includes(":");
  const addr = v6 || len === undefined ? given : fullIpv4(given);
  const ip = v6 ? canonicalIpv6(addr) : isIpv4(addr) ? addr : undefined;
  const bits = len === undefined ? (v6 ? 128 : 32) : maskBits(len, v6);
  if (ip === undefined || bits === undefined) return undefined;
  const masked = words(ip, v6).map((w, i) => {
    const keep = Math.max(0, Math.min(32, bits - i * 32));
    return keep === 0 ? 0 : (w & (keep === 32 ? 0xffffffff : ~((1 << (32 - keep)) - 1))) >>> 0;
  });
  return { cidr: `${text(masked, v6)}/${bits}`, family: v6 ? "ipv6" : "ipv4" };
}

export interface RuleInput {
  ethertype: string;
  protocol?: string;
  port_range_min?: number;
  port_range_max?: number;
  remote_ip_prefix?: string;
  remote_group_id?: string;
}

/** The port range rules of a protocol: ports for those that have them, a type and code for ICMP, none for the others. */
function portRange(r: RuleInput): Violation[] {
  const { protocol: p, port_range_min: min, port_range_max: max } = r;
  if (min === undefined && max === undefined) return [];
  if (p === undefined) return [{ property: min !== undefined ? "port_range_min" : "port_range_max", message: "needs a protocol" }];
  if (PORTED.has(p)) {
    const out: Violation[] = [];
    for (const [property, v] of [["port_range_min", min], ["port_range_max", max]] as const) {
      if (v === undefined) out.push({ property, message: `is required with the other bound for ${p}` });
      else if (v < 1 || v > 65535) out.push({ property, message: "must be between 1 and 65535" });
    }
    if (out.length === 0 && min! > max!) out.push({ property: "port_range_min", message: "must not be greater than port_range_max" });
    return out;
  }
  if (TYPED.has(p)) {
    if (min === undefined) return [{ property: "port_range_max", message: `is an ${p} code, which needs a type (port_range_min)` }];
    const out: Violation[] = [];
    if (min < 0 || min > 255) out.push({ property: "port_range_min", message: `is the ${p} type: must be between 0 and 255` });
    if (max !== undefined && (max < 0 || max > 255)) out.push({ property: "port_range_max", message: `is the ${p} code: must be between 0 and 255` });
    return out;
  }
  return [{ property: "port_range_min", message: `is not supported for protocol ${p} (only ${[...PORTED, ...TYPED].join(", ")} have ranges)` }];
}

/** Every rule a rule breaks beyond the single fields' own checks. */
export function ruleViolations(r: RuleInput): Violation[] {
  const out = portRange(r);
  if (r.protocol !== undefined && IPV6_ONLY.has(r.protocol) && r.ethertype !== "ipv6") out.push({ property: "protocol", message: `${r.protocol} needs ethertype ipv6` });
  if (r.remote_ip_prefix !== undefined && r.remote_group_id !== undefined) {
    out.push({ property: "remote_group_id", message: "must not be given with remote_ip_prefix: a rule has at most one remote" });
  }
  if (r.remote_ip_prefix !== undefined) {
    const p = normalisePrefix(r.remote_ip_prefix);
    if (!p) out.push({ property: "remote_ip_prefix", message: "must be an IP prefix in CIDR form (address/length)" });
    else if (p.family !== r.ethertype) out.push({ property: "remote_ip_prefix", message: `is an ${p.family} prefix, which does not match ethertype ${r.ethertype}` });
  }
  return out;
}

/** A stored or new rule's fields that decide whether two rules of one group are the same. */
export interface RuleShape {
  direction: string;
  ethertype: string;
  protocol: string | null;
  port_range_min: number | null;
  port_range_max: number | null;
  remote_ip_prefix: string | null;
  remote_group_id: string | null;
}

/**
 * What makes two rules of a group the same rule, as the networking API judges it: the protocol
 * by its number, no range the same as a ported protocol's full range, no prefix the same as the
 * whole address space.
 */
export function sameRuleKey(r: RuleShape): string {
  const proto = r.protocol === null ? null : protocolNumber(r.protocol);
  const full = r.protocol !== null && PORTED.has(BY_NUMBER.get(proto!) ?? "") && r.port_range_min === 1 && r.port_range_max === 65535;
  const ports = full ? [null, null] : [r.port_range_min, r.port_range_max];
  const everywhere = r.remote_ip_prefix === "0.0.0.0/0" || r.remote_ip_prefix === "::/0";
  return JSON.stringify([r.direction, r.ethertype, proto, ...ports, everywhere ? null : r.remote_ip_prefix, r.remote_group_id]);
}
