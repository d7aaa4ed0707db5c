// Host-interface-port bindings (topology.md §6): a binding is its port's host_id and
// interface_name. The host is the tunnel service's: whether it exists and is in some tunnel
// zone is asked of it (GetHostStanding); the rest is checked here, under the port's row lock.
//
// The writes that concern one host (a binding, the clearing of a deleted host's bindings) take
// the same transaction lock, taken before the tunnel service is asked. So a binding racing its
// host's delete either commits first, and is cleared when the deletion is handled here, or
// asks after the delete committed, and is refused with 404. Interface names on a host are
// unique under that lock too.
//
// A host deleted: the tunnel service refuses it while a port is bound (it asks ListHostPorts),
// and this service clears whatever bindings are left when it handles tunnel.Host.deleted (a
// durable consumer: a delete made while this service is down is handled when it is back).
// A port's delete takes its binding with it (a port delete hook announces the binding's deletion).
import { ApiError, type BusMessage, type CallContext, type Change, checkConditions, type Handlers, isUuid, partOf, type Queryable, type ServiceContext, announcedId } from "@vnm/kit";
import { portDeleteHooks } from "./ports.ts";

const BINDING = "vnm.routing.v1.HostInterfacePort";
const MAX_PAGE = 1000;

interface PortRow {
  id: string;
  seq: string;
  host_id: string | null;
  interface_name: string | null;
  tenant_id: string | null;
}

type Emit = (c: Change) => void;

/** A binding as the API shows it. */
const bindingOf = (p: { id: string; host_id: string | null; interface_name: string | null }) => ({ hostId: p.host_id, portId: p.id, interfaceName: p.interface_name });

/** The change of a binding: under its host, no tenant (administrators only). */
function bindingChange(event: Change["event"], hostId: string, portId: string): Change {
  return { kind: "HostInterfacePort", event, id: portId, path: `/hosts/${hostId}/ports/${portId}`, tenantId: null };
}

/** Serialises the writes that concern one host's bindings, until the transaction ends. */
async function lockHost(q: Queryable, hostId: string): Promise<void> {
  await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`routing-host:${hostId}`]);
}

const noHost = (id: string) => ApiError.notFound(`There is no Host with ID ${id}.`);

/** The host's standing as the tunnel service says (503 when it cannot be asked). */
async function standingOf(svc: Pick<ServiceContext, "call">, hostId: string): Promise<{ exists: boolean; inZone: boolean }> {
  const r = await svc.call("vnm.tunnel.v1.HostService", "GetHostStanding", { id: hostId });
  return { exists: r["exists"] === true, inZone: r["inZone"] === true };
}

/** The port's own announcement, as its kind renders it (when this service declares the kind). */
function portChanged(svc: Pick<ServiceContext, "resources">, row: PortRow, emit: Emit): void {
  const ports = svc.resources.kind("routing.Port");
  if (ports) emit(ports.change("updated", row));
}

/** A port deleted: its binding goes with its row, announced, so that the host's list is not answered from a stale copy. */
portDeleteHooks.push(async (_q, port, emit) => {
  if (port.host_id) emit(bindingChange("deleted", port.host_id, port.id));
});

type Rules = NonNullable<ServiceContext["resources"]["rules"]>;

/**
 * ListHostPorts: the ports bound to a host, in creation order, a page at a time (404 for a missing
 * host). The tunnel service asks it about a host it holds locked for its delete: it is not asked
 * back (a call back for every delete in flight could take the last of its database connections).
 */
async function listBindings(svc: ServiceContext, req: { id?: unknown; limit?: unknown; marker?: unknown }, ctx: CallContext) {
  const hostId = isUuid(req.id) ? req.id.toLowerCase() : undefined;
  const fromTunnel = ctx.identity !== undefined && partOf(ctx.identity) === "tunnel";
  if (!hostId || (!fromTunnel && !(await standingOf(svc, hostId)).exists)) throw noHost(String(req.id ?? ""));
  const limit = req.limit === undefined || req.limit === null ? undefined : Number(req.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)) throw ApiError.invalid([{ property: "limit", message: `must be between 1 and ${MAX_PAGE}` }]);
  const params: unknown[] = [hostId];
  let after = "";
  if (typeof req.marker === "string" && req.marker !== "") {
    const at = isUuid(req.marker) ? (await svc.store.query<{ seq: string }>("SELECT seq FROM ports WHERE id = $1 AND host_id = $2", [req.marker.toLowerCase(), hostId])).rows[0] : undefined;
    if (!at) throw ApiError.invalid([{ property: "marker", message: "must be the id of an item of this list" }]);
    params.push(at.seq);
    after = ` AND seq > $${params.length}`;
  }
  const rows = (await svc.store.query<PortRow>(`SELECT * FROM ports WHERE host_id = $1${after} ORDER BY seq${limit ? ` LIMIT ${limit + 1}` : ""}`, params)).rows;
  const more = limit !== undefined && rows.length > limit;
  if (more) rows.length = limit;
  const items = rows.map(bindingOf);
  return more ? { items, next_marker: rows[rows.length - 1]!.id } : { items };
}

const notBound = (req: { id?: unknown; portId?: unknown }) => ApiError.notFound(`Port ${String(req.portId ?? "")} is not bound to host ${String(req.id ?? "")}.`);

/** GetHostPort: 404 unless the port is bound to this host. */
async function getBinding(svc: ServiceContext, req: { id?: unknown; portId?: unknown }) {
  const hostId = isUuid(req.id) ? req.id.toLowerCase() : undefined;
  const portId = isUuid(req.portId) ? req.portId.toLowerCase() : undefined;
  const row = hostId && portId ? (await svc.store.query<PortRow>("SELECT * FROM ports WHERE id = $1 AND host_id = $2", [portId, hostId])).rows[0] : undefined;
  if (!row) throw notBound(req);
  return bindingOf(row);
}

/** CreateHostPort: topology.md §6's checks, in its order. */
function createBinding(svc: ServiceContext, rules: Rules, req: { id?: unknown; binding?: unknown }, ctx: CallContext) {
  return svc.store.tx(ctx, async (q, emit) => {
    // 1. The host (404), before the body is judged.
    const hostId = isUuid(req.id) ? req.id.toLowerCase() : undefined;
    if (!hostId) throw noHost(String(req.id ?? ""));
    await lockHost(q, hostId);
    const standing = await standingOf(svc, hostId);
    if (!standing.exists) throw noHost(hostId);
    const body = rules.checked(BINDING, req.binding ?? {});
    // 2. In some tunnel zone (409).
    if (!standing.inZone) throw ApiError.conflict(`Host ${hostId} is not in any tunnel zone; add it to one before binding ports to it.`);
    // 3. The port (404), locked: of two bindings of one port at once, the later sees the earlier.
    const port = (await q.query<PortRow>("SELECT * FROM ports WHERE id = $1 FOR UPDATE", [body.portId])).rows[0];
    if (!port) throw ApiError.notFound(`There is no Port with ID ${body.portId}.`);
    // 4. Not bound yet, to any host (409).
    if (port.host_id) throw ApiError.conflict(`Port ${port.id} is already bound to host ${port.host_id}.`);
    const name = body.interfaceName;
    // 5. The interface not used by another port of this host (409).
    if (name !== undefined) {
      const user = (await q.query<{ id: string }>("SELECT id FROM ports WHERE host_id = $1 AND interface_name = $2", [hostId, name])).rows[0];
      if (user) throw ApiError.conflict(`Interface ${name} of host ${hostId} is already used by port ${user.id}.`);
    }
    // 6. An interface name (400) (not MidoNet: it stores none).
    if (name === undefined) throw ApiError.invalid([{ property: "interfaceName", message: "may not be null" }]);
    const row = (await q.query<PortRow>("UPDATE ports SET host_id = $2, interface_name = $3 WHERE id = $1 RETURNING *", [port.id, hostId, name])).rows[0]!;
    emit(bindingChange("created", hostId, port.id));
    portChanged(svc, row, emit);
    return bindingOf(row);
  });
}

/** The binding's entity tag, for the caller's conditions against it as it is locked: its GET's answer as a peer decodes it (the gateway's ETag). */
function bindingTag(svc: ServiceContext, row: PortRow): string {
  return svc.resources.answerTag("vnm.routing.v1.BindingService", "GetHostPort", bindingOf(row));
}

/** DeleteHostPort: 404, and nothing changes, unless the port is bound to this host (not MidoNet: it unbinds it from any). */
async function removeBinding(svc: ServiceContext, req: { id?: unknown; portId?: unknown }, ctx: CallContext) {
  const hostId = isUuid(req.id) ? req.id.toLowerCase() : undefined;
  const portId = isUuid(req.portId) ? req.portId.toLowerCase() : undefined;
  if (!hostId || !portId) throw notBound(req);
  await svc.store.tx(ctx, async (q, emit) => {
    await lockHost(q, hostId);
    const port = (await q.query<PortRow>("SELECT * FROM ports WHERE id = $1 AND host_id = $2 FOR UPDATE", [portId, hostId])).rows[0];
    if (!port) throw notBound(req);
    await checkConditions(ctx, () => bindingTag(svc, port));
    const row = (await q.query<PortRow>("UPDATE ports SET host_id = NULL, interface_name = NULL WHERE id = $1 RETURNING *", [portId])).rows[0]!;
    emit(bindingChange("deleted", hostId, portId));
    portChanged(svc, row, emit);
  });
  return {};
}

/** The BindingService's handlers. */
export function bindingHandlers(svc: ServiceContext): Record<string, Handlers> {
  const rules = svc.resources.rules;
  if (!rules) throw new Error("the routing service's resources were made without the rules");
  return {
    "vnm.routing.v1.BindingService": {
      ListHostPorts: (req: { id?: unknown; limit?: unknown; marker?: unknown }, ctx: CallContext) => listBindings(svc, req, ctx),
      GetHostPort: (req: { id?: unknown; portId?: unknown }) => getBinding(svc, req),
      CreateHostPort: (req: { id?: unknown; binding?: unknown }, ctx: CallContext) => createBinding(svc, rules, req, ctx),
      DeleteHostPort: (req: { id?: unknown; portId?: unknown }, ctx: CallContext) => removeBinding(svc, req, ctx),
    },
  };
}

/** tunnel.Host.deleted: the host's bindings, if any are left, are cleared (each announced). */
export function onHostDeleted(svc: ServiceContext) {
  return async (msg: BusMessage): Promise<void> => {
    const hostId = announcedId(msg);
    if (!hostId) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await lockHost(q, hostId);
      const cleared = await q.query<PortRow>(
        "UPDATE ports p SET host_id = NULL, interface_name = NULL FROM (SELECT id FROM ports WHERE host_id = $1 ORDER BY id FOR UPDATE) o WHERE p.id = o.id RETURNING p.*",
        [hostId],
      );
      for (const row of cleared.rows) {
        emit(bindingChange("deleted", hostId, row.id));
        portChanged(svc, row, emit);
      }
    });
  };
}
