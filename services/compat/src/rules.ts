// Security group rule validation, as the OpenStack networking API these rules mirror has it,
// except that every verdict is a 400 naming the field where Neutron's own validator answers
// 500 (a protocol of "06", 6.5, true or ["tcp"]). Pure functions: no database, no network.
import { canonicalIpv6, isIpv4 } from "@vnm/kit";

export interface Violation {
  property: string;
  message: string;
}

/** Protocol names and the numbers they stand for; a known number is stored as its name. */
const NAMED: Record<string, number> = { icmp: 1, tcp: 6, udp: 17, icmpv6: 58 };
const BY_NUMBER = new Map(Object.entries(NAMED).map(([k, v]) => [v, k]));

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
  const wrong = { error: `must be one of ${Object.keys(NAMED).join(", ")} (any case) or an integer from 0 to 255` };
  if (typeof v === "string" && Object.hasOwn(NAMED, v.toLowerCase())) return { value: v.toLowerCase() };
  const digits = typeof v === "number" && Number.isInteger(v) ? String(v) : typeof v === "string" && /^(0|[1-9]\d{0,2})$/.test(v) ? v : undefined;
  if (digits === undefined) return wrong;
  const n = Number(digits);
  if (n < 0 || n > 255) return wrong;
  return { value: BY_NUMBER.get(n) ?? String(n) };
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

/** A prefix in CIDR form with its host bits cleared ("10.0.0.5/24" -> "10.0.0.0/24"), and its family. */
export function normalisePrefix(raw: string): { cidr: string; family: "ipv4" | "ipv6" } | undefined {
  const [addr, len, extra] = raw.split("/");
  if (extra !== undefined || !addr) return undefined;
  const v6 = addr.includes(":");
  const ip = v6 ? canonicalIpv6(addr) : isIpv4(addr) ? addr : undefined;
  const max = v6 ? 128 : 32;
  if (ip === undefined || (len !== undefined && !/^\d{1,3}$/.test(len))) return undefined;
  const bits = len === undefined ? max : Number(len);
  if (bits > max) return undefined;
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

/** The port range rules of a protocol: tcp/udp ports, icmp type and code, none for the others. */
function portRange(r: RuleInput): Violation[] {
  const { protocol: p, port_range_min: min, port_range_max: max } = r;
  if (min === undefined && max === undefined) return [];
  if (p === undefined) return [{ property: min !== undefined ? "port_range_min" : "port_range_max", message: "needs a protocol" }];
  if (p === "tcp" || p === "udp") {
    const out: Violation[] = [];
    for (const [property, v] of [["port_range_min", min], ["port_range_max", max]] as const) {
      if (v === undefined) out.push({ property, message: `is required with the other bound for ${p}` });
      else if (v < 1 || v > 65535) out.push({ property, message: "must be between 1 and 65535" });
    }
    if (out.length === 0 && min! > max!) out.push({ property: "port_range_min", message: "must not be greater than port_range_max" });
    return out;
  }
  if (p === "icmp" || p === "icmpv6") {
    if (min === undefined) return [{ property: "port_range_max", message: `is an ${p} code, which needs a type (port_range_min)` }];
    const out: Violation[] = [];
    if (min < 0 || min > 255) out.push({ property: "port_range_min", message: `is the ${p} type: must be between 0 and 255` });
    if (max !== undefined && (max < 0 || max > 255)) out.push({ property: "port_range_max", message: `is the ${p} code: must be between 0 and 255` });
    return out;
  }
  return [{ property: "port_range_min", message: `is not supported for protocol ${p}` }];
}

/** Every rule a rule breaks beyond the single fields' own checks. */
export function ruleViolations(r: RuleInput): Violation[] {
  const out = portRange(r);
  if (r.protocol === "icmpv6" && r.ethertype !== "ipv6") out.push({ property: "protocol", message: "icmpv6 needs ethertype ipv6" });
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
