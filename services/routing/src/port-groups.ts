// Port groups (PortGroup v1, topology.md §7) and their member ports (PortGroupPort v1). A group
// belongs to a tenant, as a router does; a membership follows its group's tenant. A member port
// must exist and be one the caller may see (404 either way, alike); a port is a member of a
// group once (409). A membership goes, announced, with its group (the kit deletes a group's
// children) or with its port (the port delete's hook below, registered with ports.ts, runs in
// the port delete's transaction; the foreign key to ports only backs it up). A membership added
// or removed announces its group as updated too: the group's lists by port (?port_id=) change.
import { ApiError, type CallContext, type Change, type Handlers, isUuid, maySee, memberOf, type Queryable, Resource, type ServiceContext, type Store } from "@vnm/kit";
import { portDeleteHooks, ports } from "./ports.ts";

type Emit = (c: Change) => void;
type Req = Record<string, unknown>;

interface GroupRow {
  id: string;
  seq: string;
  tenant_id: string | null;
  name: string | null;
  stateful: boolean;
}

interface MemberRow {
  id: string;
  port_group_id: string;
  port_id: string;
}

const noPort = (id: unknown) => ports.notFound(String(id));

/**
 * A port group with the list `?port_id=` asks for: the groups that port is a member of, in
 * list order, a page at a time (the tenant filter and the paging as for any list; the call's
 * field filters are left to the gateway).
 */
class PortGroupResource extends Resource<"vnm.routing.v1.PortGroup", GroupRow> {
  override handlers(store: Store): Handlers {
    const out = super.handlers(store);
    const rpc = this.info.rpcs.list!;
    const all = out[rpc]!;
    out[rpc] = (req: Req, ctx: CallContext) => (typeof req["port_id"] === "string" ? this.ofPort(store.pool, req) : all(req, ctx));
    return out;
  }

  private async ofPort(q: Queryable, req: Req) {
    const portId = req["port_id"];
    if (!isUuid(portId)) throw ApiError.invalid([{ property: "port_id", message: "must be a valid UUID" }]);
    const conditions = ["id IN (SELECT port_group_id FROM port_group_ports WHERE port_id = $1)"];
    const params: unknown[] = [portId.toLowerCase()];
    if (typeof req["tenant_id"] === "string") {
      params.push(req["tenant_id"]);
      conditions.push(`tenant_id = $${params.length}`);
    }
    const limit = typeof req["limit"] === "number" ? req["limit"] : undefined;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 1000)) {
      throw ApiError.invalid([{ property: "limit", message: "must be between 1 and 1000" }]);
    }
    const marker = req["marker"];
    if (typeof marker === "string" && marker !== "") {
      const badMarker = ApiError.invalid([{ property: "marker", message: "must be the id of an item of this list" }]);
      if (!isUuid(marker)) throw badMarker;
      const at = await q.query<{ seq: string }>(`SELECT seq FROM port_groups WHERE id = $${params.length + 1} AND ${conditions.join(" AND ")}`, [...params, marker.toLowerCase()]);
      if (!at.rows[0]) throw badMarker;
      params.push(at.rows[0].seq);
      conditions.push(`seq > $${params.length}`);
    }
    const rows = (await q.query<GroupRow>(`SELECT * FROM port_groups WHERE ${conditions.join(" AND ")} ORDER BY seq${limit ? ` LIMIT ${limit + 1}` : ""}`, params)).rows;
    const more = limit !== undefined && rows.length > limit;
    if (more) rows.length = limit;
    const items = rows.map((r) => this.toMessage(r));
    return more ? { items, next_marker: rows[rows.length - 1]!.id } : { items };
  }
}

export const portGroups = new PortGroupResource({
  proto: "vnm.routing.v1.PortGroup",
  table: "port_groups",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  // PUT replaces: what the body leaves out returns to its default.
  defaults: { stateful: false },
});

/**
 * A membership's POST checks the port against the caller: a port of another tenant is as
 * unknown as none (404), before the body's other rules and the duplicate's 409.
 */
class MembershipResource extends Resource<"vnm.routing.v1.PortGroupPort", MemberRow> {
  override handlers(store: Store): Handlers {
    const out = super.handlers(store);
    const rpc = this.info.rpcs.create!;
    out[rpc] = (req: Req, ctx: CallContext) =>
      store.tx(ctx, async (q, emit) => {
        await portGroups.locate(q, { id: req["id"] }, "key share"); // a missing group first
        const portId = memberOf(req[this.info.body ?? ""], "portId");
        if (isUuid(portId)) {
          const port = (await q.query<{ tenant_id: string | null }>("SELECT tenant_id FROM ports WHERE id = $1 FOR KEY SHARE", [portId.toLowerCase()])).rows[0];
          if (port && !maySee(ctx?.identity, port.tenant_id)) throw noPort(portId);
        }
        return this.create(q, emit, req);
      });
    return out;
  }
}

export const portGroupPorts = new MembershipResource({
  proto: "vnm.routing.v1.PortGroupPort",
  table: "port_group_ports",
  parentColumn: "port_group_id",
  key: { read: (req) => (isUuid(req["portId"]) ? { port_id: req["portId"].toLowerCase() } : undefined) },
  columns: (m) => ({ port_id: m.portId }),
  render: (r: MemberRow) => ({ portId: r.port_id, portGroupId: r.port_group_id }),
  // The port exists, and stays until the membership is written (its delete waits).
  references: async (q, m) => {
    const found = await q.query("SELECT 1 FROM ports WHERE id = $1 FOR KEY SHARE", [m.portId]);
    if (!found.rowCount) throw noPort(m.portId);
  },
  conflict: (m) => `Port ${m.portId} is already a member of this port group.`,
  // The group's members changed: its lists by port (?port_id=) change with them.
  changed: (q, row, _event, emit) => portGroups.touched(q, row.port_group_id, emit),
});

/** A port about to be deleted leaves its groups, each membership announced (topology.md §2, §7). */
async function portLeavesGroups(q: Queryable, port: { id: string }, emit: Emit): Promise<void> {
  const gone = await q.query<MemberRow & { tenant_id: string | null }>(
    `DELETE FROM port_group_ports m USING port_groups g WHERE m.port_id = $1 AND g.id = m.port_group_id
     RETURNING m.*, g.tenant_id`,
    [port.id],
  );
  for (const r of gone.rows) emit(portGroupPorts.change("deleted", r, [{ id: r.port_group_id, tenant_id: r.tenant_id }]));
  for (const group of new Set(gone.rows.map((r) => r.port_group_id))) await portGroups.touched(q, group, emit);
}
portDeleteHooks.push(portLeavesGroups);

/** GET /ports/{id}/port_groups: the port's memberships, of the groups the caller may see. */
export function portGroupHandlers(svc: Pick<ServiceContext, "store">): Record<string, Handlers> {
  return {
    "vnm.routing.v1.PortGroupService": {
      ListPortPortGroups: async (req: Req, ctx: CallContext) => {
        const q = svc.store.pool;
        const port = (await ports.locate(q, { id: req["id"] })).row as { id: string; tenant_id: string | null };
        if (!maySee(ctx?.identity, port.tenant_id)) throw noPort(req["id"]);
        const rows = (
          await q.query<MemberRow & { tenant_id: string | null }>(
            `SELECT m.*, g.tenant_id FROM port_group_ports m JOIN port_groups g ON g.id = m.port_group_id
             WHERE m.port_id = $1 ORDER BY m.id`,
            [port.id],
          )
        ).rows;
        return { items: rows.filter((r) => maySee(ctx?.identity, r.tenant_id)).map((r) => portGroupPorts.toMessage(r)) };
      },
    },
  };
}

