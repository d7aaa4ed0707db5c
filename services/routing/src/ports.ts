// Port (v3, topology.md §2-§3): a port of a router (this service's) or of a bridge (the bridge
// service's), created under its device, read, changed and deleted at /ports/{id}, and linked to
// one other port. A port's tenant is its device's, kept on the port (lists filter on it).
//
// - A router port's address rules beyond each field's own (topology.proto): its network must
//   contain its address (portAddressInNetwork); its MAC is random when absent; an address adds
//   the port's Local route.
// - A bridge port's bridge must exist: the bridge service says, under a per-bridge transaction
//   lock, and a bridge announced deleted leaves a tombstone, so a port created while its bridge
//   is deleted never survives it (onBridgesDeleted deletes the bridge's ports as port deletes).
// - A port delete unlinks its peer and deletes the routes through it, all announced.
// - A link locks both ports in id order in one transaction: of two links of one port, one wins.
// - Its filters and mirror lists name the policy service's chains and mirrors (filters.ts): a
//   write naming a new one asks that service, and a deleted one is cleared from the ports.
import { randomBytes, randomUUID } from "node:crypto";
import {
  announcedId,
  announcedIds,
  isJsonObject,
  ApiError,
  type BusMessage,
  type CallContext,
  type Handlers,
  isUuid,
  mergeHandlers,
  maySee,
  PG,
  pgCode,
  type Queryable,
  Resource,
  type ServiceContext,
  type Checked,
  type Change,
  checkConditions,
  Tombstones,
} from "@vnm/kit";
import { policyRefs, routers } from "./routers.ts";
import { routes } from "./routes.ts";

type Emit = (c: Change) => void;
type Req = Record<string, unknown>;

export interface PortRow {
  id: string;
  type: "Bridge" | "Router" | "Vxlan";
  device_id: string;
  router_id: string | null;
  tenant_id: string | null;
  admin_state_up: boolean;
  inbound_filter_id: string | null;
  outbound_filter_id: string | null;
  inbound_mirror_ids: string[];
  outbound_mirror_ids: string[];
  vif_id: string | null;
  vlan_id: number | null;
  port_address: string | null;
  network_length: number | null;
  port_mac: string | null;
  peer_id: string | null;
  host_id: string | null;
  interface_name: string | null;
  vtep_id: string | null;
}

type PortBody = Checked<"vnm.routing.v1.Port">;

const ipv4ToInt = (a: string) => a.split(".").reduce((n, o) => n * 256 + Number(o), 0);
const intToIpv4 = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");
const maskOf = (length: number) => (length === 0 ? 0 : (0xffffffff << (32 - length)) >>> 0);
/** The network address of address/length. */
export const networkOf = (address: string, length: number) => intToIpv4((ipv4ToInt(address) & maskOf(length)) >>> 0);

/** A router port's networkAddress, when sent, must contain its portAddress (not MidoNet: it silently replaces it). */
export function portAddressInNetwork(p: PortBody): void {
  if (p.portAddress === undefined || p.networkAddress === undefined) return;
  const length = p.networkLength ?? 0;
  if (networkOf(p.portAddress, length) !== networkOf(p.networkAddress, length)) {
    throw ApiError.invalid([{ property: "networkAddress", message: `must contain portAddress ${p.portAddress} (${networkOf(p.portAddress, length)}/${length})` }]);
  }
}

/** A port's type must be its device's: a Bridge port on a bridge, a Router port on a router (400 naming type). */
function typeFitsDevice(p: PortBody, type: "Bridge" | "Router"): void {
  if (p.type !== undefined && p.type !== type) {
    throw ApiError.invalid([{ property: "type", message: `must be ${type} for a port of a ${type.toLowerCase()}` }]);
  }
}

/** A random unicast, locally administered MAC (MidoNet gives a router port one when none is sent). */
function randomMac(): string {
  const b = randomBytes(6);
  b[0] = (b[0]! & 0xfc) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join(":");
}

export const ports = new Resource({
  proto: "vnm.routing.v1.Port",
  table: "ports",
  // Read as shown (migration 5), so that every shown field filters /ports in SQL.
  view: "ports_shown",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  references: (q, p, { ctx, current }) => policyRefs.require(q, p, current, ctx),
  // PUT sets these; device, type, addresses, MAC, peer and binding stay (topology.md §2).
  columns: (p) => ({
    admin_state_up: p.adminStateUp ?? true,
    inbound_filter_id: p.inboundFilterId ?? null,
    outbound_filter_id: p.outboundFilterId ?? null,
    inbound_mirror_ids: p.inboundMirrorIds ?? [],
    outbound_mirror_ids: p.outboundMirrorIds ?? [],
    vif_id: p.vifId ?? null,
    vlan_id: p.vlanId ?? 0,
  }),
  render: (r: PortRow) => ({
    id: r.id,
    type: r.type,
    deviceId: r.device_id,
    adminStateUp: r.admin_state_up,
    inboundFilterId: r.inbound_filter_id,
    outboundFilterId: r.outbound_filter_id,
    inboundMirrorIds: r.inbound_mirror_ids,
    outboundMirrorIds: r.outbound_mirror_ids,
    vifId: r.vif_id,
    peerId: r.peer_id,
    hostId: r.host_id,
    interfaceName: r.interface_name,
    active: false,
    vlanId: r.type === "Bridge" ? (r.vlan_id ?? 0) : null,
    portAddress: r.port_address,
    networkAddress: r.port_address ? networkOf(r.port_address, r.network_length ?? 0) : null,
    networkLength: r.port_address ? (r.network_length ?? 0) : null,
    portMac: r.port_mac,
    portSubnet: r.port_address ? [`${r.port_address}/${r.network_length ?? 0}`] : [],
    vtepId: r.vtep_id,
    tenantId: r.tenant_id,
    devicePath: r.type === "Router" ? `/routers/${r.device_id}` : `/bridges/${r.device_id}`,
  }),
  cascade: async (q, row: PortRow, emit) => {
    if (row.type === "Vxlan") throw ApiError.conflict(`Port ${row.id} is a VXLAN port: it goes with its VTEP binding.`);
    await portGoing(q, row, emit);
  },
});

/** The ports kind, its checks calling the policy service as this service. */
export function portsFor(svc: Pick<ServiceContext, "call">) {
  policyRefs.connect(svc);
  return ports;
}

/**
 * What else a port delete changes, beyond the port itself (other kinds of this service that
 * refer to ports add theirs: port group memberships, mirrors). Each runs in the delete's
 * transaction, before the port row goes, and announces what it changes.
 */
export const portDeleteHooks: ((q: Queryable, row: PortRow, emit: Emit) => Promise<void>)[] = [];

/** A port about to go: its peer unlinked, its routes (Normal and Local) deleted, all announced. */
async function portGoing(q: Queryable, row: PortRow, emit: Emit): Promise<void> {
  if (row.peer_id) {
    await q.query("UPDATE ports SET peer_id = NULL WHERE id = $1", [row.id]);
    const peer = await q.query<PortRow>("UPDATE ports SET peer_id = NULL WHERE id = $1 RETURNING *", [row.peer_id]);
    for (const p of peer.rows) emit(ports.change("updated", p));
  }
  const gone = await q.query("DELETE FROM routes WHERE next_hop_port = $1 RETURNING *", [row.id]);
  for (const r of gone.rows) emit(routes.change("deleted", r));
  for (const hook of portDeleteHooks) await hook(q, row, emit);
}

/** Deletes ports as port deletes (their peers unlinked, routes gone), each announced. */
export async function dropPorts(q: Queryable, rows: PortRow[], emit: Emit): Promise<void> {
  for (const row of rows) {
    // The peer may have been one of these and unlinked meanwhile.
    const now = (await q.query<PortRow>("SELECT * FROM ports WHERE id = $1", [row.id])).rows[0];
    if (!now) continue;
    await portGoing(q, now, emit);
    await q.query("DELETE FROM ports WHERE id = $1", [row.id]);
    emit(ports.change("deleted", now));
  }
}

/** A router's ports, deleted as port deletes (the router is being deleted). */
export async function dropRouterPorts(q: Queryable, routerId: string, emit: Emit): Promise<void> {
  const rows = (await q.query<PortRow>("SELECT * FROM ports WHERE router_id = $1 ORDER BY id FOR UPDATE", [routerId])).rows;
  await dropPorts(q, rows, emit);
}

/** A router moved to another tenant: its ports follow, each announced. */
export async function portsOfRouterMoved(q: Queryable, routerId: string, tenantId: string | null, emit: Emit): Promise<void> {
  const moved = await q.query<PortRow>("UPDATE ports SET tenant_id = $2 WHERE router_id = $1 RETURNING *", [routerId, tenantId]);
  for (const p of moved.rows) emit(ports.change("updated", p));
}

/** Bridges the bridge service announced deleted; their lock serialises the writes that concern one bridge. */
export const deletedBridges = new Tombstones("deleted_bridges", "routing-bridge");

export const noBridge = (id: unknown) => ApiError.notFound(`There is no Bridge with ID ${String(id)}.`);

/** The bridge as the bridge service has it: 404 when missing; 503 when that service is down. */
export async function getBridge(svc: Pick<ServiceContext, "call">, id: unknown): Promise<Record<string, unknown>> {
  if (!isUuid(id)) throw noBridge(id);
  try {
    return await svc.call("vnm.bridge.v1.BridgeService", "GetBridge", { id: id.toLowerCase() });
  } catch (err) {
    throw ApiError.from(err).code === noBridge(id).code ? noBridge(id) : err;
  }
}

/** The bridge a port is created on: it exists and is not being deleted (locked until commit). */
async function requireBridge(svc: Pick<ServiceContext, "call">, q: Queryable, id: string): Promise<Record<string, unknown>> {
  if (await deletedBridges.lockedGone(q, id)) throw noBridge(id);
  return getBridge(svc, id);
}

/** A router the caller may see (404 otherwise), optionally locked against its delete. */
async function routerFor(q: Queryable, id: unknown, ctx: CallContext | undefined, lock?: "key share"): Promise<{ id: string; tenant_id: string | null }> {
  const row = (await routers.locate(q, { id }, lock)).row as { id: string; tenant_id: string | null };
  if (!maySee(ctx?.identity, row.tenant_id)) throw routers.notFound(String(id));
  return row;
}

/** Inserts a port; its id in use is a 409. */
export async function insertPort(q: Queryable, cols: Record<string, unknown>): Promise<PortRow> {
  const names = Object.keys(cols);
  try {
    const sql = `INSERT INTO ports (${names.join(", ")}) VALUES (${names.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING *`;
    return (await q.query<PortRow>(sql, Object.values(cols))).rows[0]!;
  } catch (err) {
    if (pgCode(err) === PG.uniqueViolation) throw ApiError.conflict(`A Port with ID ${String(cols["id"])} already exists.`);
    throw err;
  }
}

/** The columns every new port takes from its body. */
export function commonColumns(p: PortBody): Record<string, unknown> {
  return { id: p.id ?? randomUUID(), ...ports.spec.columns!(p, {}) } as Record<string, unknown>;
}

/** A port's Local route: how its router reaches the port's own address (topology.md §4). */
async function addLocalRoute(q: Queryable, port: PortRow, emit: Emit): Promise<void> {
  const r = await q.query(
    `INSERT INTO routes (id, router_id, type, dst_network_addr, dst_network_length, src_network_addr, src_network_length, next_hop_gateway, next_hop_port, weight)
     VALUES ($1, $2, 'Local', $3, 32, '0.0.0.0', 0, NULL, $4, 0) RETURNING *`,
    [randomUUID(), port.device_id, port.port_address, port.id],
  );
  emit(routes.change("created", r.rows[0]));
}

/** A device's ports (or its peers), in creation order, with the call's field filters applied. */
const listWhere = (q: Queryable, where: Record<string, unknown>, ctx: CallContext) => ports.listFiltered(q, where, ctx);

/** The link handlers: POST and DELETE /ports/{id}/link. */
function linkHandlers(svc: ServiceContext): Handlers {
  const { store } = svc;
  const notLinkable = () => ApiError.conflict("Ports are not linkable.");
  return {
    LinkPort: (req: Req, ctx: CallContext) =>
      store.tx(ctx, async (q, emit) => {
        const id = req["id"];
        if (!isUuid(id)) throw ports.notFound(String(id));
        await ports.locate(q, { id }); // a missing path port is a 404 before the body is judged
        const { peerId } = svc.resources.rules!.checked("vnm.routing.v1.PortLink", req["link"] ?? {});
        const pair = [id.toLowerCase(), peerId].sort();
        // Both rows locked in id order: two links of one port wait for each other.
        const rows = (await q.query<PortRow>("SELECT * FROM ports WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE", [pair])).rows;
        const port = rows.find((r) => r.id === id.toLowerCase());
        const peer = rows.find((r) => r.id === peerId);
        if (!port || !maySee(ctx?.identity, port.tenant_id)) throw ports.notFound(id);
        if (!peer || !maySee(ctx?.identity, peer.tenant_id)) throw ports.notFound(peerId);
        if (port.id === peer.id || port.device_id === peer.device_id || port.peer_id || peer.peer_id) throw notLinkable();
        const a = (await q.query<PortRow>("UPDATE ports SET peer_id = $2 WHERE id = $1 RETURNING *", [port.id, peer.id])).rows[0]!;
        const b = (await q.query<PortRow>("UPDATE ports SET peer_id = $2 WHERE id = $1 RETURNING *", [peer.id, port.id])).rows[0]!;
        emit(ports.change("updated", a));
        emit(ports.change("updated", b));
        return ports.toMessage(a);
      }),
    UnlinkPort: async (req: Req, ctx: CallContext) => {
      await store.tx(ctx, async (q, emit) => {
        const { row } = await ports.locate(q, { id: req["id"] });
        if (!maySee(ctx?.identity, row.tenant_id)) throw ports.notFound(String(req["id"]));
        // If-Match and If-None-Match name the port as the caller last saw it (the link has no representation of its own).
        await checkConditions(ctx, () => ports.etagOf(row, []));
        const notLinked = () => ApiError.notFound(`Port ${row.id} is not linked.`);
        if (!row.peer_id) throw notLinked();
        const rows = (await q.query<PortRow>("SELECT * FROM ports WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE", [[row.id, row.peer_id]])).rows;
        const port = rows.find((r) => r.id === row.id);
        // Unlinked (or relinked) meanwhile: what the caller asked to undo is not there.
        if (!port?.peer_id || port.peer_id !== row.peer_id) throw notLinked();
        for (const [a, b] of [[port.id, port.peer_id], [port.peer_id, port.id]]) {
          const changed = await q.query<PortRow>("UPDATE ports SET peer_id = NULL WHERE id = $1 AND peer_id = $2 RETURNING *", [a, b]);
          for (const p of changed.rows) emit(ports.change("updated", p));
        }
      });
      return {};
    },
  };
}

/** The handlers of the ports under a device, and of links. */
export function portHandlers(svc: ServiceContext): Record<string, Handlers> {
  const { store } = svc;
  const parse = (req: Req) => svc.resources.rules!.checked("vnm.routing.v1.Port", req["port"] ?? {});
  const handlers: Handlers = {
    ListRouterPorts: async (req: Req, ctx: CallContext) => {
      const r = await routerFor(store.pool, req["routerId"], ctx);
      return listWhere(store.pool, { router_id: r.id }, ctx);
    },
    ListRouterPeerPorts: async (req: Req, ctx: CallContext) => {
      const r = await routerFor(store.pool, req["routerId"], ctx);
      return listWhere(store.pool, { peer_device_id: r.id }, ctx);
    },
    CreateRouterPort: (req: Req, ctx: CallContext) =>
      store.tx(ctx, async (q, emit) => {
        const router = await routerFor(q, req["routerId"], ctx, "key share");
        const p = parse(req);
        typeFitsDevice(p, "Router");
        portAddressInNetwork(p);
        await policyRefs.require(q, p, undefined, ctx);
        const port = await insertPort(q, {
          ...commonColumns(p),
          type: "Router",
          device_id: router.id,
          tenant_id: router.tenant_id,
          vlan_id: null,
          port_address: p.portAddress ?? null,
          network_length: p.portAddress ? (p.networkLength ?? 0) : null,
          port_mac: p.portMac ?? randomMac(),
        });
        emit(ports.change("created", port));
        if (port.port_address) await addLocalRoute(q, port, emit);
        return ports.toMessage(port);
      }),
    ListBridgePorts: async (req: Req, ctx: CallContext) => {
      const b = await getBridge(svc, req["bridgeId"]);
      return listWhere(store.pool, { device_id: b["id"], type: "Bridge" }, ctx);
    },
    ListBridgePeerPorts: async (req: Req, ctx: CallContext) => {
      const b = await getBridge(svc, req["bridgeId"]);
      return listWhere(store.pool, { peer_device_id: b["id"] }, ctx);
    },
    CreateBridgePort: (req: Req, ctx: CallContext) =>
      store.tx(ctx, async (q, emit) => {
        const id = req["bridgeId"];
        if (!isUuid(id)) throw noBridge(id);
        const bridge = await requireBridge(svc, q, id.toLowerCase());
        const tenant = typeof bridge["tenantId"] === "string" ? bridge["tenantId"] : null;
        if (!maySee(ctx?.identity, tenant)) throw noBridge(id);
        const p = parse(req);
        typeFitsDevice(p, "Bridge");
        await policyRefs.require(q, p, undefined, ctx);
        const port = await insertPort(q, { ...commonColumns(p), type: "Bridge", device_id: id.toLowerCase(), tenant_id: tenant });
        emit(ports.change("created", port));
        return ports.toMessage(port);
      }),
  };
  return mergeHandlers({ "vnm.routing.v1.PortService": handlers }, { "vnm.routing.v1.PortService": linkHandlers(svc) });
}

/** Bridges deleted: their ports go as port deletes (each announced), and they stay known as gone. */
export function onBridgesDeleted(svc: ServiceContext) {
  return async (msgs: BusMessage[]): Promise<void> => {
    const ids = announcedIds(msgs);
    if (ids.length === 0) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedBridges.buryAll(q, ids);
      const rows = (await q.query<PortRow>("SELECT * FROM ports WHERE device_id = ANY($1::uuid[]) AND router_id IS NULL ORDER BY id FOR UPDATE", [ids])).rows;
      await dropPorts(q, rows, emit);
    });
  };
}

/**
 * A bridge moved to another tenant (its update announced again on bridge.Bridge.updated.tenant,
 * TENANT_MOVED: this consumer hears the moves, not every update): its ports' tenant follows the
 * bridge's, as the bridge service has it now. When every port of the bridge already has the
 * tenant the move announces, the bridge service is not asked (most bridges have no port here):
 * only the bridge service publishes its changes (deploy/nats.conf), and this consumer takes them
 * in order, so a tenant changed since comes with a later move. The check follows the lock a
 * port's create takes before it reads its bridge, so a port created meanwhile is either seen
 * here or reads the bridge as changed.
 */
export function onBridgeMoved(svc: ServiceContext) {
  return async (msg: BusMessage): Promise<void> => {
    const id = announcedId(msg);
    if (!id) return;
    const announced = isJsonObject(msg.data) ? msg.data["tenantId"] : undefined;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedBridges.lock(q, id);
      if (announced === null || typeof announced === "string") {
        const other = await q.query("SELECT 1 FROM ports WHERE device_id = $1 AND router_id IS NULL AND tenant_id IS DISTINCT FROM $2 LIMIT 1", [id, announced]);
        if (other.rowCount === 0) return;
      }
      let bridge: Record<string, unknown>;
      try {
        bridge = await getBridge(svc, id);
      } catch (err) {
        if (ApiError.from(err).code === noBridge(id).code) return; // its deletion takes its ports
        throw err;
      }
      const tenant = typeof bridge["tenantId"] === "string" ? bridge["tenantId"] : null;
      const moved = await q.query<PortRow>("UPDATE ports SET tenant_id = $2 WHERE device_id = $1 AND router_id IS NULL AND tenant_id IS DISTINCT FROM $2 RETURNING *", [id, tenant]);
      for (const p of moved.rows) emit(ports.change("updated", p));
    });
  };
}
