// Mirror (v1): traffic matching any of its conditions is copied to toPortId, a port the routing
// service must know (policy.md §4). Administrators only. Its conditions are checked as a rule's
// (conditions.ts). A PUT replaces toPortId and conditions. Deleting the port deletes the mirror:
// the routing service announces it (routing.Port.deleted), a durable consumer here follows
// (service.ts). A mirror written and a port's deletion handled take the same transaction lock,
// and the deletion leaves a tombstone, so a mirror written while its port goes never survives it.
import { announcedId, ApiError, type BusMessage, type Queryable, Resource, type ServiceContext, Tombstones } from "@vnm/kit";
import { conditionViolations, normalCondition } from "./conditions.ts";

interface MirrorRow {
  id: string;
  to_port_id: string;
  conditions: Record<string, unknown>[];
}

/** Ports the routing service announced deleted. */
const deletedPorts = new Tombstones("deleted_ports", "policy-port");

const noPort = (id: string) => ApiError.notFound(`There is no Port with ID ${id}.`);

/** 404 unless the port exists and is not being deleted; 503 when the routing service is down. */
async function requirePort(svc: Pick<ServiceContext, "call">, q: Queryable, id: string): Promise<void> {
  if (await deletedPorts.lockedGone(q, id)) throw noPort(id);
  try {
    await svc.call("vnm.routing.v1.PortService", "GetPort", { id });
  } catch (err) {
    throw ApiError.from(err).code === noPort(id).code ? noPort(id) : err;
  }
}

export function mirrorsFor(svc: Pick<ServiceContext, "call">) {
  return new Resource({
    proto: "vnm.policy.v1.Mirror",
    table: "mirrors",
    references: (q, m) => requirePort(svc, q, m.toPortId),
    validate(_q, m) {
      const violations = (m.conditions ?? []).flatMap((c, i) => conditionViolations(c as Record<string, unknown>, "ordinary", undefined, `conditions[${i}].`));
      if (violations.length > 0) throw ApiError.invalid(violations);
    },
    columns: (m) => ({
      to_port_id: m.toPortId,
      conditions: JSON.stringify((m.conditions ?? []).map((c) => normalCondition(c as Record<string, unknown>, "ordinary"))),
    }),
    render: (m: MirrorRow) => ({ id: m.id, toPortId: m.to_port_id, conditions: m.conditions }),
  });
}

/** A port deleted: the mirrors sending to it go (each announced), and it stays known as gone. */
export function onPortDeleted(svc: ServiceContext) {
  const mirrors = svc.resources.of("vnm.policy.v1.Mirror");
  return async (msg: BusMessage): Promise<void> => {
    const port = announcedId(msg);
    if (!port) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedPorts.bury(q, port);
      const gone = await q.query("DELETE FROM mirrors WHERE to_port_id = $1 RETURNING *", [port]);
      for (const row of gone.rows) emit(mirrors.change("deleted", row));
    });
  };
}
