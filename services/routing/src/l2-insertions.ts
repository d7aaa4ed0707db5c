// L2 Insertion (v1): traffic of a MAC on a protected port redirected to a service port. One
// insertion per (port, service port) pair (a unique constraint: 409, also under concurrent
// creates); no port may be both protected and a service port, in one insertion or across
// insertions (400 naming the field), checked under per-port locks so concurrent writes cannot
// slip past each other. A PUT may not move an insertion to other ports.
import { ApiError, int, mac, type Queryable, Resource, uuid } from "@vnm/kit";
import { z } from "zod";

interface InsertionRow {
  id: string;
  port_id: string;
  srv_port_id: string;
  mac: string;
  position: number;
  fail_open: boolean;
  vlan: number;
}

const input = z
  .object({
    id: uuid().optional(),
    mac: mac(),
    portId: uuid(),
    srvPortId: uuid(),
    position: int(-(2 ** 31), 2 ** 31 - 1),
    failOpen: z.boolean().optional(),
    vlan: int(0, 4095).optional(),
  })
  .superRefine((b, ctx) => {
    if (b.portId === b.srvPortId) ctx.addIssue({ code: "custom", path: ["srvPortId"], message: "must not be the protected port (portId)" });
  });
type Insertion = z.output<typeof input>;

/** Holds both ports until commit (in id order, so two writers cannot deadlock), then checks their roles. */
async function checkRoles(q: Queryable, b: Insertion, current?: InsertionRow): Promise<void> {
  for (const port of [b.portId, b.srvPortId].sort()) await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`l2-port:${port}`]);
  const other = current ? current.id : "00000000-0000-0000-0000-000000000000";
  const asService = await q.query("SELECT 1 FROM l2_insertions WHERE srv_port_id = $1 AND id <> $2 LIMIT 1", [b.portId, other]);
  if (asService.rowCount) throw ApiError.invalid([{ property: "portId", message: "is the service port of another insertion" }]);
  const asProtected = await q.query("SELECT 1 FROM l2_insertions WHERE port_id = $1 AND id <> $2 LIMIT 1", [b.srvPortId, other]);
  if (asProtected.rowCount) throw ApiError.invalid([{ property: "srvPortId", message: "is the protected port of another insertion" }]);
}

export const l2Insertions = new Resource<typeof input, InsertionRow>({
  proto: "vnm.routing.v1.L2Insertion",
  table: "l2_insertions",
  order: ["position", "port_id", "srv_port_id"],
  filters: { port: { column: "port_id", parse: uuid() }, srv_port: { column: "srv_port_id", parse: uuid() } },
  input,
  defaults: { failOpen: false, vlan: 0 },
  validate: async (q, b, { current }) => {
    if (current && current.port_id !== b.portId) throw ApiError.invalid([{ property: "portId", message: "cannot be changed; create another insertion" }]);
    if (current && current.srv_port_id !== b.srvPortId) throw ApiError.invalid([{ property: "srvPortId", message: "cannot be changed; create another insertion" }]);
    await checkRoles(q, b, current);
  },
  conflict: (b) => `An insertion for port ${b.portId} and service port ${b.srvPortId} already exists.`,
});
