// L2 Insertion (v1): traffic of a MAC on a protected port redirected to a service port. One
// insertion per (port, service port) pair (a unique constraint: 409, also under concurrent
// creates); no port may be both protected and a service port, in one insertion or across
// insertions (400 naming the field), checked under per-port locks so concurrent writes cannot
// slip past each other. A PUT may not move an insertion to other ports. Each field's own rules
// are routing.proto's; these, between fields and against the database, are named below.
import { ApiError, type Checked, type Queryable, Resource } from "@vnm/kit";

interface InsertionRow {
  id: string;
  port_id: string;
  srv_port_id: string;
  mac: string;
  position: number;
  fail_open: boolean;
  vlan: number;
}

/** An insertion's body, checked against routing.proto's rules (MAC and port ids in lower case). */
type Insertion = Checked<"vnm.routing.v1.L2Insertion">;

/** The service port is not the protected one. */
function portsDiffer(b: Insertion): void {
  if (b.portId === b.srvPortId) throw ApiError.invalid([{ property: "srvPortId", message: "must not be the protected port (portId)" }]);
}

/** A PUT keeps the insertion's ports. */
function portsKept(b: Insertion, current: InsertionRow): void {
  if (current.port_id !== b.portId) throw ApiError.invalid([{ property: "portId", message: "cannot be changed; create another insertion" }]);
  if (current.srv_port_id !== b.srvPortId) throw ApiError.invalid([{ property: "srvPortId", message: "cannot be changed; create another insertion" }]);
}

/** Holds both ports until commit (in id order, so two writers cannot deadlock), then checks their roles. */
async function checkRoles(q: Queryable, b: Insertion, current?: InsertionRow): Promise<void> {
  for (const port of [b.portId, b.srvPortId].sort()) await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`l2-port:${port}`]);
  const other = current ? current.id : "00000000-0000-0000-0000-000000000000";
  const asService = await q.query("SELECT 1 FROM l2_insertions WHERE srv_port_id = $1 AND id <> $2 LIMIT 1", [b.portId, other]);
  if (asService.rowCount) throw ApiError.invalid([{ property: "portId", message: "is the service port of another insertion" }]);
  const asProtected = await q.query("SELECT 1 FROM l2_insertions WHERE port_id = $1 AND id <> $2 LIMIT 1", [b.srvPortId, other]);
  if (asProtected.rowCount) throw ApiError.invalid([{ property: "srvPortId", message: "is the protected port of another insertion" }]);
}

export const l2Insertions = new Resource({
  proto: "vnm.routing.v1.L2Insertion",
  table: "l2_insertions",
  order: ["position", "port_id", "srv_port_id"],
  // ?port= and ?srv_port= are checked by ListL2InsertionsRequest's rules (UUIDs).
  filters: { port: "port_id", srv_port: "srv_port_id" },
  defaults: { failOpen: false, vlan: 0 },
  validate: async (q, b, { current }: { current?: InsertionRow }) => {
    portsDiffer(b);
    if (current) portsKept(b, current);
    await checkRoles(q, b, current);
  },
  conflict: (b) => `An insertion for port ${b.portId} and service port ${b.srvPortId} already exists.`,
});
