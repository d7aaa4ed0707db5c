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
// The reconcile runs on every new session (a device restarted empty is rewritten), soon after a
// change any replica or service announces of what the device holds (a binding, a bridge's MAC
// or ARP entry, a port's binding to a host, a tunnel zone's member: service.ts), and every
// VNM_VTEP_RECONCILE_MS (30 s) on each connected session, a safety net for an announcement
// missed. It runs on the replica holding the VTEP's session only.
import { canonicalIpv6 } from "@vnm/kit";
import type { RemoteState } from "./remote-macs.ts";

/** The default of VNM_VTEP_RECONCILE_MS: the periodic full reconcile, a safety net behind the announcements. */
export const DEFAULT_RECONCILE_MS = 30_000;
export const SWITCH_PREFIX = "mn-";
/** The Mcast_Macs_Remote MAC for frames to unknown destinations (hardware_vtep). */
export const UNKNOWN_DST = "unknown-dst";

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

/**
 * Brings the device at `ip` to the bindings of `bound`, and says what it learned in the bound
 * bridges' switches (read before the write: a switch it creates has learned nothing yet).
 */
export async function reconcile(transact: Transact, ip: string, bound: BoundBridge[], remote?: RemoteState): Promise<Learned> {
  const read = checked(
    await transact([
      { op: "select", table: "Physical_Switch", where: [], columns: ["_uuid", "management_ips", "ports"] },
      { op: "select", table: "Physical_Port", where: [], columns: ["_uuid", "name", "vlan_bindings"] },
      { op: "select", table: "Logical_Switch", where: [], columns: ["_uuid", "name", "tunnel_key"] },
      { op: "select", table: "Ucast_Macs_Local", where: [], columns: ["MAC", "logical_switch", "ipaddr"] },
      ...(remote ? REMOTE_SELECTS : []),
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
  if (remote) remoteOps(ops, read, bound, ref, remote);
  const learned = learnedIn(read[3], nameOf, bound);
  if (ops.length > 0) checked(await transact(ops));
  return learned;
}

/**
 * What the device learned in the bound bridges' switches, read alone (a select of Logical_Switch
 * and Ucast_Macs_Local, nothing written): the pass the learned-MAC monitor asks for.
 */
export async function learnedOnly(transact: Transact, bound: BoundBridge[]): Promise<Learned> {
  const read = checked(
    await transact([
      { op: "select", table: "Logical_Switch", where: [], columns: ["_uuid", "name"] },
      { op: "select", table: "Ucast_Macs_Local", where: [], columns: ["MAC", "logical_switch", "ipaddr"] },
    ]),
  );
  const nameOf = new Map<string, string>();
  for (const s of rowsOf(read[0])) {
    const u = uuidOf(s["_uuid"]);
    if (u && typeof s["name"] === "string") nameOf.set(u, s["name"]);
  }
  return learnedIn(read[1], nameOf, bound);
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

/** What remoteOps reads, after the four selects of reconcile. */
const REMOTE_SELECTS: Op[] = [
  { op: "select", table: "Ucast_Macs_Remote", where: [], columns: ["_uuid", "MAC", "logical_switch", "locator", "ipaddr"] },
  { op: "select", table: "Mcast_Macs_Remote", where: [], columns: ["_uuid", "MAC", "logical_switch", "locator_set"] },
  { op: "select", table: "Physical_Locator", where: [], columns: ["_uuid", "encapsulation_type", "dst_ip", "tunnel_key"] },
  { op: "select", table: "Physical_Locator_Set", where: [], columns: ["_uuid", "locators"] },
];

/**
 * The writes that bring each bound bridge's switch to its remote MACs (vtep-bindings.md, "MACs of
 * the bridge"): one Ucast_Macs_Remote row per MAC, pointing at the host's Physical_Locator
 * (vxlan_over_ipv4, reused when the device has it), with the ARP table's IP; rows of MACs no longer
 * wanted deleted. And one Mcast_Macs_Remote "unknown-dst" row toward the tunnel zone's flooding
 * proxy (none when the zone has none). A bridge `remote` could not read keeps its Ucast rows.
 */
function remoteOps(ops: Op[], read: unknown[], bound: BoundBridge[], ref: Map<string, unknown>, remote: RemoteState): void {
  const ucast = rowsOf(read[4]);
  const mcast = rowsOf(read[5]);
  const locators = rowsOf(read[6]);
  const sets = rowsOf(read[7]);
  const dstOf = new Map<string, string>(); // locator uuid -> dst_ip
  for (const l of locators) {
    const u = uuidOf(l["_uuid"]);
    if (u && typeof l["dst_ip"] === "string") dstOf.set(u, l["dst_ip"]);
  }
  const locRef = new Map<string, unknown>();
  const locator = (dst: string): unknown => {
    const known = locRef.get(dst);
    if (known) return known;
    const have = locators.find((l) => l["dst_ip"] === dst && atoms(l["encapsulation_type"])[0] === "vxlan_over_ipv4" && atoms(l["tunnel_key"]).length === 0);
    const u = have && uuidOf(have["_uuid"]);
    let r: unknown;
    if (u) r = ["uuid", u];
    else {
      const name = `loc${locRef.size}`;
      ops.push({ op: "insert", table: "Physical_Locator", row: { encapsulation_type: "vxlan_over_ipv4", dst_ip: dst }, "uuid-name": name });
      r = ["named-uuid", name];
    }
    locRef.set(dst, r);
    return r;
  };
  const setDsts = new Map<string, string[]>(); // locator set uuid -> its locators' dst_ips
  for (const s of sets) {
    const u = uuidOf(s["_uuid"]);
    if (u) setDsts.set(u, atoms(s["locators"]).map((l) => dstOf.get(uuidOf(l) ?? "") ?? ""));
  }
  bound.forEach((b, i) => {
    const bridge = b.bridgeId.toLowerCase();
    const sw = ref.get(`${SWITCH_PREFIX}${bridge}`);
    const swUuid = uuidOf(sw); // undefined for a switch this transaction inserts: it has no rows yet
    const inSwitch = (r: Record<string, unknown>) => swUuid !== undefined && uuidOf(r["logical_switch"]) === swUuid;
    const wanted = remote.byBridge.get(bridge);
    if (wanted) {
      const current = new Map<string, Record<string, unknown>[]>(); // MAC -> rows
      for (const r of ucast.filter(inSwitch)) {
        const mac = String(r["MAC"]).toLowerCase();
        if (!current.has(mac)) current.set(mac, []);
        current.get(mac)!.push(r);
      }
      for (const m of wanted) {
        const rows = current.get(m.mac) ?? [];
        current.delete(m.mac);
        const [first, ...extra] = rows;
        for (const r of extra) ops.push({ op: "delete", table: "Ucast_Macs_Remote", where: byUuid(uuidOf(r["_uuid"])!) });
        if (!first) {
          ops.push({ op: "insert", table: "Ucast_Macs_Remote", row: { MAC: m.mac, logical_switch: sw, locator: locator(m.dst), ipaddr: m.ip } });
        } else if (dstOf.get(uuidOf(first["locator"]) ?? "") !== m.dst || first["ipaddr"] !== m.ip || first["MAC"] !== m.mac) {
          ops.push({ op: "update", table: "Ucast_Macs_Remote", where: byUuid(uuidOf(first["_uuid"])!), row: { MAC: m.mac, locator: locator(m.dst), ipaddr: m.ip } });
        }
      }
      for (const rows of current.values()) for (const r of rows) ops.push({ op: "delete", table: "Ucast_Macs_Remote", where: byUuid(uuidOf(r["_uuid"])!) });
    }
    // unknown-dst toward the flooding proxy.
    const unknown = mcast.filter((r) => inSwitch(r) && r["MAC"] === UNKNOWN_DST);
    const fp = remote.floodingProxy;
    const right = (r: Record<string, unknown>) => fp !== undefined && JSON.stringify(setDsts.get(uuidOf(r["locator_set"]) ?? "")) === JSON.stringify([fp]);
    if (unknown.length === 1 && right(unknown[0]!)) return;
    for (const r of unknown) ops.push({ op: "delete", table: "Mcast_Macs_Remote", where: byUuid(uuidOf(r["_uuid"])!) });
    if (fp === undefined) return;
    ops.push({ op: "insert", table: "Physical_Locator_Set", row: { locators: ["set", [locator(fp)]] }, "uuid-name": `fps${i}` });
    ops.push({ op: "insert", table: "Mcast_Macs_Remote", row: { MAC: UNKNOWN_DST, logical_switch: sw, locator_set: ["named-uuid", `fps${i}`] } });
  });
}
