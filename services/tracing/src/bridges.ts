// The bridges traces are on: a BRIDGE trace names a bridge the bridge service knows, and goes
// when the bridge service announces the bridge deleted. A trace written and the deletion
// handled for the same bridge take the same transaction lock, and the deletion leaves a
// tombstone, so a trace created while its bridge is deleted never survives it.
import { ApiError, type BusMessage, type Queryable, type ServiceContext, Tombstones, announcedId } from "@vnm/kit";

/** Bridges the bridge service announced deleted. */
const deletedBridges = new Tombstones("deleted_bridges", "tracing-bridge");

/** 404 unless the bridge exists and is not being deleted; 503 when the bridge service is down. */
export async function requireBridge(svc: Pick<ServiceContext, "call">, q: Queryable, id: string): Promise<void> {
  const missing = ApiError.notFound(`There is no Bridge with ID ${id}.`);
  if (await deletedBridges.lockedGone(q, id)) throw missing;
  try {
    await svc.call("vnm.bridge.v1.BridgeService", "GetBridge", { id });
  } catch (err) {
    throw ApiError.from(err).code === missing.code ? missing : err;
  }
}

/** A bridge deleted: its traces go (each announced), and it stays known as gone. */
export function onBridgeDeleted(svc: ServiceContext) {
  const traces = svc.resources.of("vnm.tracing.v1.TraceRequest");
  return async (msg: BusMessage): Promise<void> => {
    const id = announcedId(msg);
    if (!id) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedBridges.bury(q, id);
      const gone = await q.query("DELETE FROM trace_requests WHERE device_type = 'BRIDGE' AND device_id = $1 RETURNING *", [id]);
      for (const row of gone.rows) emit(traces.change("deleted", row));
    });
  };
}
