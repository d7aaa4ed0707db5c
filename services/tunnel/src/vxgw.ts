// What the device holds for the bindings (vtep-bindings.md, "What the device holds"): for each
// bridge bound on the VTEP, a Logical_Switch `mn-<bridge id>` whose tunnel_key is the bridge's
// VNI, and each bound (port, VLAN) as `VLAN -> that switch` in the Physical_Port's vlan_bindings.
// The device is brought to that state by a full reconcile: read (one transaction of selects),
// then write what differs (one transaction):
// - a missing mn- switch is inserted, one with another tunnel_key is given the bridge's VNI;
// - each port of the VTEP's switch keeps the pairs that point at switches not named mn-…
//   (someone else's), loses those that point at an mn- switch the API does not bind there, and
//   gains the API's (the API's pair wins over someone else's on the same VLAN);
// - an mn- switch no bridge binds there is deleted, in the same transaction as every
//   Ucast_Macs_*/Mcast_Macs_* row that refers to it and its vlan_bindings pairs (the schema's
//   strong references would refuse a lone delete).
// The reconcile runs on every new session (a device restarted empty is rewritten), when a
// binding changes on this replica, and every RECONCILE_EVERY_MS on each connected session (a
// binding made on another replica). It runs on the replica holding the VTEP's session only.
import { createHash } from "node:crypto";
import { canonicalIpv6 } from "@vnm/kit";

export const RECONCILE_EVERY_MS = 3_000;
export const SWITCH_PREFIX = "mn-";

/** A bridge bound on the VTEP: its VNI and its (port, VLAN) pairs. */
export interface BoundBridge {
  bridgeId: string;
  vni: number;
  pairs: { port: string; vlan: number }[];
}

type Op = Record<string, unknown>;
type Transact = (ops: Op[]) => Promise<unknown[]>;

const uuidOf = (v: unknown): string | undefined => (Array.isArray(v) && v[0] === "uuid" && typeof v[1] === "string" ? v[1] : undefined);
/** An OVSDB set's atoms (a lone atom is a set of one). */
const atoms = (v: unknown): unknown[] => (Array.isArray(v) && v[0] === "set" && Array.isArray(v[1]) ? v[1] : v === undefined ? [] : [v]);
/** An OVSDB map's pairs. */
const pairsOf = (v: unknown): [unknown, unknown][] => (Array.isArray(v) && v[0] === "map" && Array.isArray(v[1]) ? (v[1] as [unknown, unknown][]) : []);
const sameIp = (a: string, b: string) => a === b || (a.includes(":") && canonicalIpv6(a) === canonicalIpv6(b));
const byUuid = (u: string) => [["_uuid", "==", ["uuid", u]]];

/** The rows of a select's result. */
function rowsOf(result: unknown): Record<string, unknown>[] {
  const rows = (result as { rows?: unknown } | undefined)?.rows;
  return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
}

/** Transact's results, or the first error a result or the transaction reports. */
export function checked(results: unknown): unknown[] {
  if (!Array.isArray(results)) throw new Error("transact answered with no array");
  for (const r of results) {
    if (r && typeof r === "object" && "error" in r) {
      const e = r as { error: unknown; details?: unknown };
      throw new Error(`the device refused the write: ${String(e.error)}${e.details ? ` (${String(e.details)})` : ""}`);
    }
  }
  return results;
}

/** A MAC the device learned in a bridge's switch, with its IP ("" for none); lower case. */
export interface LearnedMac {
  mac: string;
  ip: string;
}

/** The MACs the device learned (Ucast_Macs_Local) in each bound bridge's switch, by bridge id, as last read. */
export type Learned = Map<string, LearnedMac[]>;

/** The VXLAN port id routing gives a (bridge, VTEP) pair (the same derivation as routing's vxlan-ports.ts). */
export function vxlanPortId(bridgeId: string, vtepId: string): string {
  const h = createHash("sha1").update(`vnm:vxlan-port:${bridgeId.toLowerCase()}:${vtepId.toLowerCase()}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * Brings the device at `ip` to the bindings of `bound`, and says what it learned in the bound
 * bridges' switches (read before the write: a switch it creates has learned nothing yet).
 */
export async function reconcile(transact: Transact, ip: string, bound: BoundBridge[]): Promise<Learned> {
  const read = checked(
    await transact([
      { op: "select", table: "Physical_Switch", where: [], columns: ["_uuid", "management_ips", "ports"] },
      { op: "select", table: "Physical_Port", where: [], columns: ["_uuid", "name", "vlan_bindings"] },
      { op: "select", table: "Logical_Switch", where: [], columns: ["_uuid", "name", "tunnel_key"] },
      { op: "select", table: "Ucast_Macs_Local", where: [], columns: ["MAC", "logical_switch", "ipaddr"] },
    ]),
  );
  const sw = rowsOf(read[0]).find((r) => atoms(r["management_ips"]).some((m) => typeof m === "string" && sameIp(m, ip)));
  if (!sw) throw new Error(`the device has no Physical_Switch with management address ${ip}`);
  const portUuids = new Set(atoms(sw["ports"]).map(uuidOf));
  const ports = rowsOf(read[1]).filter((p) => portUuids.has(uuidOf(p["_uuid"])));
  const switches = rowsOf(read[2]);
  const nameOf = new Map<string, string>(); // switch uuid -> name
  for (const s of switches) {
    const u = uuidOf(s["_uuid"]);
    if (u && typeof s["name"] === "string") nameOf.set(u, s["name"]);
  }

  const ops: Op[] = [];
  // The switch of each bound bridge: its uuid, or the name of the one this transaction inserts.
  const ref = new Map<string, unknown>();
  const wanted = new Set<string>();
  bound.forEach((b, i) => {
    const name = `${SWITCH_PREFIX}${b.bridgeId.toLowerCase()}`;
    wanted.add(name);
    const have = switches.find((s) => s["name"] === name);
    const u = have && uuidOf(have["_uuid"]);
    if (u) {
      ref.set(name, ["uuid", u]);
      if (atoms(have["tunnel_key"])[0] !== b.vni) ops.push({ op: "update", table: "Logical_Switch", where: byUuid(u), row: { tunnel_key: b.vni } });
    } else {
      ops.push({ op: "insert", table: "Logical_Switch", row: { name, tunnel_key: b.vni }, "uuid-name": `ls${i}` });
      ref.set(name, ["named-uuid", `ls${i}`]);
    }
  });

  // Each port's vlan_bindings: someone else's pairs kept, the API's set.
  const want = new Map<string, Map<number, unknown>>(); // port name -> VLAN -> switch ref
  for (const b of bound) {
    const name = `${SWITCH_PREFIX}${b.bridgeId.toLowerCase()}`;
    for (const p of b.pairs) {
      if (!want.has(p.port)) want.set(p.port, new Map());
      want.get(p.port)!.set(p.vlan, ref.get(name));
    }
  }
  for (const port of ports) {
    const u = uuidOf(port["_uuid"]);
    if (!u) continue;
    const current = pairsOf(port["vlan_bindings"]);
    const next = new Map<number, unknown>();
    for (const [vlan, ls] of current) {
      const lsName = nameOf.get(uuidOf(ls) ?? "") ?? "";
      if (typeof vlan === "number" && !lsName.startsWith(SWITCH_PREFIX)) next.set(vlan, ls);
    }
    for (const [vlan, ls] of want.get(String(port["name"])) ?? []) next.set(vlan, ls);
    const key = (m: Iterable<[unknown, unknown]>) => JSON.stringify([...m].map(([k, v]) => [k, v]).sort((a, c) => Number(a[0]) - Number(c[0])));
    if (key(current) !== key(next)) ops.push({ op: "update", table: "Physical_Port", where: byUuid(u), row: { vlan_bindings: ["map", [...next]] } });
  }

  // mn- switches no bridge binds here: gone, with every row that refers to them.
  for (const [u, name] of nameOf) {
    if (!name.startsWith(SWITCH_PREFIX) || wanted.has(name)) continue;
    for (const table of ["Ucast_Macs_Local", "Ucast_Macs_Remote", "Mcast_Macs_Local", "Mcast_Macs_Remote"]) {
      ops.push({ op: "delete", table, where: [["logical_switch", "==", ["uuid", u]]] });
    }
    // Pairs on ports of other switches of the device pointing at it.
    for (const port of rowsOf(read[1])) {
      const pu = uuidOf(port["_uuid"]);
      if (!pu || portUuids.has(pu)) continue;
      const current = pairsOf(port["vlan_bindings"]);
      const kept = current.filter(([, ls]) => uuidOf(ls) !== u);
      if (kept.length !== current.length) ops.push({ op: "update", table: "Physical_Port", where: byUuid(pu), row: { vlan_bindings: ["map", kept] } });
    }
    ops.push({ op: "delete", table: "Logical_Switch", where: byUuid(u) });
  }
  const learned = learnedIn(read[3], nameOf, bound);
  if (ops.length > 0) checked(await transact(ops));
  return learned;
}

/** What the device learned (a select of Ucast_Macs_Local) in the switches of bound bridges. */
function learnedIn(result: unknown, nameOf: Map<string, string>, bound: BoundBridge[]): Learned {
  const learned: Learned = new Map(bound.map((b) => [b.bridgeId.toLowerCase(), []]));
  for (const r of rowsOf(result)) {
    const name = nameOf.get(uuidOf(r["logical_switch"]) ?? "") ?? "";
    const list = name.startsWith(SWITCH_PREFIX) ? learned.get(name.slice(SWITCH_PREFIX.length)) : undefined;
    if (!list || typeof r["MAC"] !== "string") continue;
    const ipaddr = r["ipaddr"];
    list.push({ mac: r["MAC"].toLowerCase(), ip: typeof ipaddr === "string" ? ipaddr : "" });
  }
  for (const list of learned.values()) list.sort((a, b) => a.mac.localeCompare(b.mac));
  return learned;
}
