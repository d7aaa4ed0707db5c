// A rule's or a mirror's packet condition (policy.md §2's condition table). Each field's format
// and range are policy.proto's rules, checked by the kit; what no rule can say is here: a port
// range's start at most its end, and the fragment policy (computed when absent, refused when it
// cannot hold with the rule's transport ports: MidoNet's Condition and ForwardNatRule).
import { ApiError, type Violation } from "@vnm/kit";

type Obj = Record<string, unknown>;

/** The condition fields a rule or a mirror's condition carries, but the flags. */
export const CONDITION_FIELDS = [
  "nwSrcAddress",
  "nwSrcLength",
  "nwDstAddress",
  "nwDstLength",
  "nwProto",
  "nwTos",
  "tpSrc",
  "tpDst",
  "dlType",
  "dlSrc",
  "dlDst",
  "dlSrcMask",
  "dlDstMask",
  "inPorts",
  "outPorts",
  "portGroup",
  "inPortGroup",
  "outPortGroup",
  "ipAddrGroupSrc",
  "ipAddrGroupDst",
  "traversedDevice",
  "vlan",
  "icmpDataSrcIpAddress",
  "icmpDataSrcIpLength",
  "icmpDataDstIpAddress",
  "icmpDataDstIpLength",
  "fragmentPolicy",
] as const;

/** The condition's flags: false unless sent true. */
export const CONDITION_FLAGS = [
  "condInvert",
  "matchForwardFlow",
  "matchReturnFlow",
  "noVlan",
  "matchNwDstRewritten",
  "invNwSrc",
  "invNwDst",
  "invNwProto",
  "invNwTos",
  "invTpSrc",
  "invTpDst",
  "invDlType",
  "invDlSrc",
  "invDlDst",
  "invInPorts",
  "invOutPorts",
  "invPortGroup",
  "invInPortGroup",
  "invOutPortGroup",
  "invIpAddrGroupSrc",
  "invIpAddrGroupDst",
  "invTraversedDevice",
  "invIcmpDataSrcIp",
  "invIcmpDataDstIp",
] as const;

/** Prefix lengths: 0 unless sent. */
const LENGTHS = ["nwSrcLength", "nwDstLength", "icmpDataSrcIpLength", "icmpDataDstIpLength"] as const;

/** What a condition's fragment policy may be: ordinary, or a NAT rule's (floating IP or not). */
export type FragmentRule = "ordinary" | "nat";

const hasL4 = (c: Obj) => c["tpSrc"] !== undefined || c["tpDst"] !== undefined;

/** A NAT rule in MidoNet's floating-IP form: one target, one address, no ports. */
function floatingIp(targets: unknown): boolean {
  if (!Array.isArray(targets) || targets.length !== 1) return false;
  const t = targets[0] as Obj;
  return t["addressFrom"] === t["addressTo"] && (t["portFrom"] ?? 0) === 0 && (t["portTo"] ?? 0) === 0;
}

/**
 * The violations of a condition (`at` prefixes the field names: a mirror's `conditions[0].`):
 * a port range backwards; a fragment policy the rule cannot take.
 */
export function conditionViolations(c: Obj, kind: FragmentRule, natTargets: unknown, at = ""): Violation[] {
  const out: Violation[] = [];
  for (const f of ["tpSrc", "tpDst"] as const) {
    const r = c[f] as Obj | undefined;
    if (r && typeof r["start"] === "number" && typeof r["end"] === "number" && r["start"] > r["end"]) {
      out.push({ property: `${at}${f}`, message: "start must not be greater than end" });
    }
  }
  const fp = c["fragmentPolicy"];
  if (fp !== undefined) {
    if (kind === "nat" && (!floatingIp(natTargets) || hasL4(c)) && fp !== "unfragmented") {
      out.push({ property: `${at}fragmentPolicy`, message: "must be unfragmented for a NAT rule that is not a floating IP's (one target of one address and no ports, no tpSrc or tpDst)" });
    } else if (kind === "ordinary" && hasL4(c) && (fp === "any" || fp === "nonheader")) {
      out.push({ property: `${at}fragmentPolicy`, message: "must be header or unfragmented when tpSrc or tpDst is set" });
    }
  }
  return out;
}

/** Throws the 400 of a condition's violations. */
export function checkCondition(c: Obj, kind: FragmentRule, natTargets?: unknown, at = ""): void {
  const v = conditionViolations(c, kind, natTargets, at);
  if (v.length > 0) throw ApiError.invalid(v);
}

/** The fragment policy a condition gets when it names none. */
function defaultFragmentPolicy(c: Obj, kind: FragmentRule, natTargets: unknown): string {
  if (kind === "nat") return floatingIp(natTargets) && !hasL4(c) ? "any" : "unfragmented";
  return hasL4(c) ? "header" : "any";
}

/**
 * A checked condition as it is stored and shown: the fields sent, masks in lower case, the
 * lengths 0 and the flags false unless sent, the fragment policy computed when absent.
 */
export function normalCondition(c: Obj, kind: FragmentRule, natTargets?: unknown): Obj {
  const out: Obj = {};
  for (const f of CONDITION_FIELDS) {
    const v = c[f];
    if (v === undefined || v === null) continue;
    if (Array.isArray(v) && v.length === 0) continue;
    out[f] = typeof v === "string" && (f === "dlSrcMask" || f === "dlDstMask") ? v.toLowerCase() : v;
  }
  for (const f of LENGTHS) out[f] ??= 0;
  for (const f of CONDITION_FLAGS) out[f] = c[f] === true;
  out["fragmentPolicy"] ??= defaultFragmentPolicy(c, kind, natTargets);
  return out;
}
