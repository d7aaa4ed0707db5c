// Hosts and their tunnel zone memberships. An administrator registers a host (POST /hosts: in
// MidoNet the host's agent does); a PUT changes only its four weights. A host joins a zone with
// its tunnel address there (POST /tunnel_zones/{id}/hosts); a zone's deletion takes its
// memberships (the kit: they are the zone's children), and so does the host's own (below).
//
// Ports are bound to hosts in the routing service (its ports' host columns). A host with a bound
// port cannot be deleted (409): the delete asks routing for one of its ports (ListHostPorts), and
// while routing cannot say (down, or not answering in time) the delete is refused with a 503, the
// host and its bindings kept. A binding made between routing's answer and the delete's commit is
// cleared by routing when it handles this service's tunnel.Host.deleted (a durable consumer).
import { ApiError, type CallContext, canonicalIpv6, isUuid, type Queryable, Resource, type ServiceContext } from "@vnm/kit";
import { status } from "@grpc/grpc-js";

interface HostRow {
  id: string;
  name: string | null;
  addresses: string[];
  flooding_proxy_weight: number;
  container_weight: number;
  container_limit: number;
  enforce_container_limit: boolean;
  alive: boolean;
}

interface MemberRow {
  id: string;
  tunnel_zone_id: string;
  host_id: string;
  ip_address: string;
}

/** Whether a request is a PUT's (it names the host in its path) rather than a POST's. */
const isUpdate = (req: Record<string, unknown>) => typeof req["id"] === "string" && req["id"] !== "";

/**
 * 409 while a port is bound to the host, as routing says; 503 while routing cannot say (a host
 * deleted with its ports still bound would break the rule its 409 states).
 */
async function noBoundPort(svc: Pick<ServiceContext, "call">, hostId: string): Promise<void> {
  let items: unknown;
  try {
    items = (await svc.call("vnm.routing.v1.BindingService", "ListHostPorts", { id: hostId, limit: 1 }))["items"];
  } catch (err) {
    const e = ApiError.from(err);
    if (e.code !== status.UNAVAILABLE && e.code !== status.DEADLINE_EXCEEDED) throw err;
    throw ApiError.unavailable(`The routing service could not say whether host ${hostId} has bound ports (${e.message}); the host is kept: try again later`);
  }
  const bound = Array.isArray(items) ? (items[0] as Record<string, unknown> | undefined) : undefined;
  if (bound) throw ApiError.conflict(`Host ${hostId} has port ${String(bound["portId"])} bound to its interface ${String(bound["interfaceName"])}; unbind its ports before deleting it.`);
}

/** The memberships of tunnel zones: a zone's children, named by the host's id. */
export const tunnelZoneHosts = new Resource({
  proto: "vnm.tunnel.v1.TunnelZoneHost",
  table: "tunnel_zone_hosts",
  parentColumn: "tunnel_zone_id",
  key: { read: (req) => (isUuid(req["hostId"]) ? { host_id: req["hostId"].toLowerCase() } : undefined) },
  // The host exists, and stays until this commits (a host delete waits, then removes this too).
  references: async (q: Queryable, m) => {
    const host = await q.query("SELECT 1 FROM hosts WHERE id = $1 FOR KEY SHARE", [m.hostId]);
    if (!host.rowCount) throw ApiError.notFound(`There is no Host with ID ${m.hostId}.`);
  },
  conflict: (m) => `Host ${m.hostId} is already a member of this tunnel zone.`,
});

/** The host kind: its delete asks routing for bound ports (svc.call). */
export const hosts = (svc: Pick<ServiceContext, "call" | "log">) =>
  new Resource({
    proto: "vnm.tunnel.v1.Host",
    table: "hosts",
    // Name and addresses are set at registration only: a PUT leaves them, whatever its body says.
    columns: (h, req) => ({
      ...(isUpdate(req) ? {} : { name: h.name ?? null, addresses: (h.addresses ?? []).map((a) => canonicalIpv6(a) ?? a) }),
      flooding_proxy_weight: h.floodingProxyWeight ?? 1,
      container_weight: h.containerWeight ?? 1,
      container_limit: h.containerLimit ?? -1,
      enforce_container_limit: h.enforceContainerLimit ?? false,
    }),
    render: (r: HostRow) => ({
      id: r.id,
      name: r.name,
      addresses: r.addresses,
      alive: r.alive,
      floodingProxyWeight: r.flooding_proxy_weight,
      containerWeight: r.container_weight,
      containerLimit: r.container_limit,
      enforceContainerLimit: r.enforce_container_limit,
      hostInterfaces: [],
    }),
    // The host is locked (FOR UPDATE) when this runs: no membership can be added meanwhile.
    cascade: async (q: Queryable, host: HostRow, emit, _ctx: CallContext) => {
      await noBoundPort(svc, host.id);
      const gone = await q.query<MemberRow>("DELETE FROM tunnel_zone_hosts WHERE host_id = $1 RETURNING *", [host.id]);
      for (const m of gone.rows) {
        const zone = (await q.query("SELECT * FROM tunnel_zones WHERE id = $1", [m.tunnel_zone_id])).rows[0];
        emit(tunnelZoneHosts.change("deleted", m, zone ? [zone] : []));
      }
    },
  });

/** GetHostStanding: whether a host exists and is a member of some tunnel zone. */
export async function hostStanding(q: Queryable, req: { id?: unknown }): Promise<{ exists: boolean; inZone: boolean }> {
  if (!isUuid(req.id)) return { exists: false, inZone: false };
  const r = await q.query<{ in_zone: boolean }>("SELECT EXISTS (SELECT 1 FROM tunnel_zone_hosts WHERE host_id = h.id) AS in_zone FROM hosts h WHERE h.id = $1", [req.id.toLowerCase()]);
  const row = r.rows[0];
  return { exists: row !== undefined, inZone: row?.in_zone === true };
}
