// The bridges traces are on: a BRIDGE trace names a bridge the bridge service knows, and goes
// when the bridge service announces the bridge deleted. A trace written and the deletion
// handled for the same bridge take the same transaction lock, and the deletion leaves a
// tombstone, so a trace created while its bridge is deleted never survives it.
import { ApiError, type BusMessage, isJsonObject, isUuid, type Queryable, type ServiceContext } from "@vnm/kit";

/** Serialises the writes that concern one bridge, until the transaction ends. */
async function lockBridge(q: Queryable, id: string): Promise<void> {
  await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`tracing-bridge:${id}`]);
}

/** 404 unless the bridge exists and is not being deleted; 503 when the bridge service is down. */
export async function requireBridge(svc: Pick<ServiceContext, "call">, q: Queryable, id: string): Promise<void> {
  await lockBridge(q, id);
  const gone = await q.query("SELECT 1 FROM deleted_bridges WHERE id = $1", [id]);
  const missing = ApiError.notFound(`There is no Bridge with ID ${id}.`);
  if (gone.rowCount) throw missing;
  try {
    await svc.call("vnm.bridge.v1.BridgeService", "GetBridge", { id });
  } catch (err) {
    throw ApiError.from(err).code === missing.code ? missing : err;
  }
}

/** Tombstones are only needed while a deletion may race a write: a day is plenty. */
const TOMBSTONE_DAYS = 1;

/** A bridge deleted: its traces go (each announced), and it stays known as gone. */
export function onBridgeDeleted(svc: ServiceContext) {
  const traces = svc.resources.of("vnm.tracing.v1.TraceRequest");
  return async (msg: BusMessage): Promise<void> => {
    const id = isJsonObject(msg.data) ? msg.data["id"] : undefined;
    if (typeof id !== "string" || !isUuid(id)) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await lockBridge(q, id);
      await q.query("INSERT INTO deleted_bridges (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [id]);
      await q.query(`DELETE FROM deleted_bridges WHERE at < now() - interval '${TOMBSTONE_DAYS} day'`);
      const gone = await q.query("DELETE FROM trace_requests WHERE device_type = 'BRIDGE' AND device_id = $1 RETURNING *", [id]);
      for (const row of gone.rows) emit(traces.change("deleted", row));
    });
  };
}
