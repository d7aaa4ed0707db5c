// Bridge (v4): create, list (optionally by tenant), get, replace, delete.
import { randomUUID } from "node:crypto";
import { ApiError, type CallContext, type Handlers, PG, parseInput, pathId, pgCode, type Store, text, uuid } from "@vnm/kit";
import { z } from "zod";
import { entryPath } from "./mac-table.ts";
import { bridgeNotFound, requireBridge } from "./parent.ts";

const KIND = "Bridge";

/** The fields a client may send (POST and PUT); PUT ignores `id` (the gateway drops it). */
const bridgeInput = z.object({
  id: uuid().optional(),
  tenantId: text(255).optional(),
  name: text(255).optional(),
  adminStateUp: z.boolean().optional(),
  inboundFilterId: uuid().optional(),
  outboundFilterId: uuid().optional(),
  inboundMirrorIds: z.array(uuid()).max(64, "must hold at most 64 ids").optional(),
  outboundMirrorIds: z.array(uuid()).max(64, "must hold at most 64 ids").optional(),
});

interface BridgeRow {
  id: string;
  tenant_id: string | null;
  name: string | null;
  admin_state_up: boolean;
  inbound_filter_id: string | null;
  outbound_filter_id: string | null;
  inbound_mirror_ids: string[];
  outbound_mirror_ids: string[];
  vxlan_port_ids: string[];
}

const COLUMNS =
  "id, tenant_id, name, admin_state_up, inbound_filter_id, outbound_filter_id, inbound_mirror_ids, outbound_mirror_ids, vxlan_port_ids";

/** Row -> proto message; null columns are left out (the gateway shows them as null). */
export function toMessage(r: BridgeRow): Record<string, unknown> {
  const m: Record<string, unknown> = {
    id: r.id,
    adminStateUp: r.admin_state_up,
    inboundMirrorIds: r.inbound_mirror_ids,
    outboundMirrorIds: r.outbound_mirror_ids,
    vxlanPortIds: r.vxlan_port_ids,
  };
  if (r.tenant_id !== null) m["tenantId"] = r.tenant_id;
  if (r.name !== null) m["name"] = r.name;
  if (r.inbound_filter_id !== null) m["inboundFilterId"] = r.inbound_filter_id;
  if (r.outbound_filter_id !== null) m["outboundFilterId"] = r.outbound_filter_id;
  return m;
}

/** Values for the writable columns, defaults applied to what the body left out (PUT replaces). */
function writable(b: z.output<typeof bridgeInput>): unknown[] {
  return [
    b.tenantId ?? null,
    b.name ?? null,
    b.adminStateUp ?? true,
    b.inboundFilterId ?? null,
    b.outboundFilterId ?? null,
    b.inboundMirrorIds ?? [],
    b.outboundMirrorIds ?? [],
  ];
}

const notFound = bridgeNotFound;

export function bridgeHandlers(store: Store): Handlers {
  return {
    async ListBridges(req: { tenant_id?: string }) {
      const rows =
        req.tenant_id === undefined
          ? await store.query<BridgeRow>(`SELECT ${COLUMNS} FROM bridges ORDER BY seq`)
          : await store.query<BridgeRow>(`SELECT ${COLUMNS} FROM bridges WHERE tenant_id = $1 ORDER BY seq`, [
              req.tenant_id,
            ]);
      return { items: rows.rows.map(toMessage) };
    },

    async GetBridge(req: { id: string }) {
      const id = pathId(req.id, KIND);
      const rows = await store.query<BridgeRow>(`SELECT ${COLUMNS} FROM bridges WHERE id = $1`, [id]);
      const row = rows.rows[0];
      if (!row) throw notFound(id);
      return toMessage(row);
    },

    async CreateBridge(req: { bridge?: unknown }, ctx: CallContext) {
      const b = parseInput(bridgeInput, req.bridge ?? {});
      const id = b.id ?? randomUUID();
      return store.tx(ctx, async (q, emit) => {
        let row: BridgeRow | undefined;
        try {
          row = (
            await q.query<BridgeRow>(
              `INSERT INTO bridges (id, tenant_id, name, admin_state_up, inbound_filter_id, outbound_filter_id,
                 inbound_mirror_ids, outbound_mirror_ids)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
              [id, ...writable(b)],
            )
          ).rows[0];
        } catch (err) {
          if (pgCode(err) === PG.uniqueViolation) throw ApiError.conflict(`A ${KIND} with ID ${id} already exists.`);
          throw err;
        }
        if (!row) throw new Error("insert returned no row");
        emit({ kind: KIND, event: "created", id, path: `/bridges/${id}`, tenantId: row.tenant_id });
        return toMessage(row);
      });
    },

    async UpdateBridge(req: { id: string; bridge?: unknown }, ctx: CallContext) {
      const id = pathId(req.id, KIND);
      return store.tx(ctx, async (q, emit) => {
        // A missing bridge is a 404 before its body is judged.
        await requireBridge(q, id, "update");
        const b = parseInput(bridgeInput, req.bridge ?? {});
        const row = (
          await q.query<BridgeRow>(
            `UPDATE bridges SET tenant_id = $2, name = $3, admin_state_up = $4, inbound_filter_id = $5,
               outbound_filter_id = $6, inbound_mirror_ids = $7, outbound_mirror_ids = $8
             WHERE id = $1 RETURNING ${COLUMNS}`,
            [id, ...writable(b)],
          )
        ).rows[0];
        if (!row) throw notFound(id);
        emit({ kind: KIND, event: "updated", id, path: `/bridges/${id}`, tenantId: row.tenant_id });
        return toMessage(row);
      });
    },

    async DeleteBridge(req: { id: string }, ctx: CallContext) {
      const id = pathId(req.id, KIND);
      return store.tx(ctx, async (q, emit) => {
        // Lock the bridge first: a child created concurrently waits, then finds no bridge.
        const { tenantId } = await requireBridge(q, id, "update");
        // Children go first, each announced (the foreign keys would cascade silently).
        const hosts = await q.query<{ mac: string; prefix: string; length: number }>(
          `DELETE FROM dhcp_hosts h USING dhcp_subnets s WHERE h.subnet_id = s.id AND s.bridge_id = $1
           RETURNING h.mac, s.prefix, s.length`,
          [id],
        );
        for (const h of hosts.rows) {
          const path = `/bridges/${id}/dhcp/${h.prefix}_${h.length}/hosts/${h.mac}`;
          emit({ kind: "DhcpHost", event: "deleted", id: h.mac, path, tenantId });
        }
        const subnets = await q.query<{ prefix: string; length: number }>(
          "DELETE FROM dhcp_subnets WHERE bridge_id = $1 RETURNING prefix, length",
          [id],
        );
        for (const s of subnets.rows) {
          const a = `${s.prefix}_${s.length}`;
          emit({ kind: "DhcpSubnet", event: "deleted", id: a, path: `/bridges/${id}/dhcp/${a}`, tenantId });
        }
        const subnets6 = await q.query<{ prefix: string; length: number }>(
          "DELETE FROM dhcp6_subnets WHERE bridge_id = $1 RETURNING prefix, length",
          [id],
        );
        for (const s of subnets6.rows) {
          const a = `${s.prefix}_${s.length}`;
          emit({ kind: "DhcpV6Subnet", event: "deleted", id: a, path: `/bridges/${id}/dhcpV6/${a}`, tenantId });
        }
        const entries = await q.query<{ vlan_id: number; mac: string; port_id: string }>(
          "DELETE FROM mac_ports WHERE bridge_id = $1 RETURNING vlan_id, mac, port_id",
          [id],
        );
        for (const e of entries.rows) {
          const path = entryPath(id, e);
          emit({ kind: "MacPort", event: "deleted", id: path.slice(path.lastIndexOf("/") + 1), path, tenantId });
        }
        await q.query("DELETE FROM bridges WHERE id = $1", [id]);
        emit({ kind: KIND, event: "deleted", id, path: `/bridges/${id}`, tenantId });
        return {};
      });
    },
  };
}
