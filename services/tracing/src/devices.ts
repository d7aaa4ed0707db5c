// The devices traces are on: a trace names a bridge the bridge service knows, or a router or a
// port the routing service knows, and goes when that service announces the device deleted (a
// router's deletion announces each of its ports' too). A trace written and the deletion
// handled for the same device take the same transaction lock, and the deletion leaves a
// tombstone, so a trace created while its device is deleted never survives it.
import { ApiError, type BusMessage, type Queryable, type ServiceContext, Tombstones, announcedIds } from "@vnm/kit";

/** A device type a trace names (tracing.proto's deviceType), and where its devices are known. */
interface Device {
  /** The kind's name in a 404 ("There is no Port with ID ..."). */
  name: string;
  /** The service and method that answer NOT_FOUND for a device that does not exist. */
  service: string;
  get: string;
  /** The notification of its deletion, and this service's durable consumer of it. */
  deleted: string;
  consumer: string;
  tombstones: Tombstones;
}

export const DEVICES: Readonly<Record<string, Device>> = {
  BRIDGE: {
    name: "Bridge",
    service: "vnm.bridge.v1.BridgeService",
    get: "GetBridge",
    deleted: "bridge.Bridge.deleted",
    consumer: "tracing-bridge-deletions",
    tombstones: new Tombstones("deleted_bridges", "tracing-bridge"),
  },
  ROUTER: {
    name: "Router",
    service: "vnm.routing.v1.RouterService",
    get: "GetRouter",
    deleted: "routing.Router.deleted",
    consumer: "tracing-router-deletions",
    tombstones: new Tombstones("deleted_routers", "tracing-router"),
  },
  PORT: {
    name: "Port",
    service: "vnm.routing.v1.PortService",
    get: "GetPort",
    deleted: "routing.Port.deleted",
    consumer: "tracing-port-deletions",
    tombstones: new Tombstones("deleted_ports", "tracing-port"),
  },
};

/** 404 unless the device exists and is not being deleted; 503 naming its service when that is down. */
export async function requireDevice(svc: Pick<ServiceContext, "call">, q: Queryable, type: string, id: string): Promise<void> {
  const device = DEVICES[type];
  if (!device) throw new Error(`no device type ${type}`); // the field's rules allow only DEVICES' types
  const missing = ApiError.notFound(`There is no ${device.name} with ID ${id}.`);
  if (await device.tombstones.lockedGone(q, id)) throw missing;
  try {
    await svc.call(device.service, device.get, { id });
  } catch (err) {
    throw ApiError.from(err).code === missing.code ? missing : err;
  }
}

/** Devices deleted: their traces go (each announced), and they stay known as gone. */
function onDevicesDeleted(svc: ServiceContext, type: string, device: Device) {
  const traces = svc.resources.of("vnm.tracing.v1.TraceRequest");
  return async (msgs: BusMessage[]): Promise<void> => {
    const ids = announcedIds(msgs);
    if (ids.length === 0) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await device.tombstones.buryAll(q, ids);
      const gone = await q.query("DELETE FROM trace_requests WHERE device_type = $1 AND device_id = ANY($2::uuid[]) RETURNING *", [type, ids]);
      for (const row of gone.rows) emit(traces.change("deleted", row));
    });
  };
}

/**
 * Follows each device type's deletions with a durable consumer of its own, a batch of them in
 * a transaction (their order does not matter: each deletes what names one device).
 */
export function followDeletions(svc: ServiceContext): void {
  for (const [type, device] of Object.entries(DEVICES)) svc.bus.consumeBatches(device.consumer, [device.deleted], onDevicesDeleted(svc, type, device));
}
