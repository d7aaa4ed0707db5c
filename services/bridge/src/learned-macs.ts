// MACs a VTEP's device learned (vtep-bindings.md, "MACs the device learns"): the tunnel service
// reads the device's Ucast_Macs_Local rows in the bridge's switch and sets them here, for the
// bridge's VXLAN port on that VTEP (SetLearnedMacs, callers tunnel). The bridge's VLAN 0 MAC
// entries on that port become exactly those MACs; a MAC's IP becomes an ARP entry the device
// taught (`learned`); a MAC gone takes the entries the device taught of it. Entries written
// through the API are the operator's: no device takes them. Each change is announced like an
// API write.
import { ApiError, type Change, isIpv4, isUuid, parseMac, type Queryable, type Store } from "@vnm/kit";
import { arpEntries } from "./arp-table.ts";
import { macPorts } from "./mac-table.ts";

interface Learned {
  mac: string;
  ip: string;
}

export async function setLearnedMacs(store: Store, req: { id?: unknown; portId?: unknown; macs?: unknown }): Promise<Record<string, never>> {
  const { id, portId } = req;
  if (!isUuid(id) || !isUuid(portId)) throw ApiError.badRequest("id and portId must be UUIDs");
  const want = new Map<string, string>(); // mac -> ip ("" for none)
  for (const m of Array.isArray(req.macs) ? (req.macs as Partial<Learned>[]) : []) {
    const mac = parseMac(m.mac ?? "");
    if (mac) want.set(mac, typeof m.ip === "string" && isIpv4(m.ip) ? m.ip : "");
  }
  const bridgeId = id.toLowerCase();
  const port = portId.toLowerCase();
  await store.tx(undefined, async (q, emit) => {
    const bridge = (await q.query("SELECT * FROM bridges WHERE id = $1 FOR UPDATE", [bridgeId])).rows[0];
    if (!bridge) throw ApiError.notFound(`There is no Bridge with ID ${bridgeId}.`);
    const up = [bridge];
    const have = (await q.query("SELECT * FROM mac_ports WHERE bridge_id = $1 AND vlan_id = 0 AND port_id = $2", [bridgeId, port])).rows;
    const goneMacs: string[] = [];
    for (const r of have) {
      if (want.has(r["mac"])) continue;
      await q.query("DELETE FROM mac_ports WHERE id = $1", [r["id"]]);
      emit(macPorts.change("deleted", r, up));
      goneMacs.push(r["mac"]);
    }
    const known = new Set(have.map((r) => r["mac"] as string));
    for (const mac of want.keys()) {
      if (known.has(mac)) continue;
      const row = (await q.query("INSERT INTO mac_ports (bridge_id, vlan_id, mac, port_id) VALUES ($1, 0, $2, $3) ON CONFLICT DO NOTHING RETURNING *", [bridgeId, mac, port])).rows[0];
      if (row) emit(macPorts.change("created", row, up));
    }
    // ARP: what the device taught of a learned MAC is its IP for it (what it taught before goes;
    // the operator's entries of that MAC stay); a MAC gone takes what the device taught of it.
    for (const [mac, ip] of want) {
      const arps = (await q.query("SELECT * FROM arp_entries WHERE bridge_id = $1 AND mac = $2", [bridgeId, mac])).rows;
      for (const a of arps) {
        if (a["ip"] === ip || !a["learned"]) continue;
        await q.query("DELETE FROM arp_entries WHERE id = $1", [a["id"]]);
        emit(arpEntries.change("deleted", a, up));
      }
      if (ip && !arps.some((a) => a["ip"] === ip)) {
        const row = (await q.query("INSERT INTO arp_entries (bridge_id, ip, mac, learned) VALUES ($1, $2, $3, true) ON CONFLICT DO NOTHING RETURNING *", [bridgeId, ip, mac])).rows[0];
        if (row) emit(arpEntries.change("created", row, up));
      }
    }
    await forgetTaughtArp(q, emit, up, bridgeId, goneMacs);
  });
  return {};
}

/**
 * A device no longer has `macs` on its port: the ARP entries it taught of those MACs go, each
 * announced, but for a MAC still on one of `stillOn` (the bridge's other VXLAN ports, when a
 * port leaves). The operator's entries of those MACs stay.
 */
export async function forgetTaughtArp(q: Queryable, emit: (c: Change) => void, up: Record<string, unknown>[], bridgeId: string, macs: string[], stillOn: string[] = []): Promise<void> {
  if (macs.length === 0) return;
  const gone = (
    await q.query(
      `DELETE FROM arp_entries a WHERE a.bridge_id = $1 AND a.learned AND a.mac = ANY($2::text[])
         AND NOT EXISTS (SELECT 1 FROM mac_ports m WHERE m.bridge_id = $1 AND m.vlan_id = 0 AND m.mac = a.mac AND m.port_id = ANY($3::uuid[]))
       RETURNING *`,
      [bridgeId, macs, stillOn],
    )
  ).rows;
  for (const a of gone) emit(arpEntries.change("deleted", a, up));
}
