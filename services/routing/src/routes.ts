// Route (v1): created under its router (the path's), read and deleted at /routes/{id}, never
// changed. A Normal route needs its next hop (port and gateway); the other types must not
// carry one (nextHopRule). Routers and ports are only referenced here: their ids are
// syntax-checked. Each field's own rules are routing.proto's.
import { ApiError, type Checked, isUuid, Resource, type Violation } from "@vnm/kit";

interface RouteRow {
  id: string;
  router_id: string;
  type: string;
  dst_network_addr: string;
  dst_network_length: number;
  src_network_addr: string;
  src_network_length: number;
  next_hop_gateway: string | null;
  next_hop_port: string | null;
  weight: number;
  learned: boolean;
}

/** A route's body, checked against routing.proto's rules (ids in lower case, type one of Normal, BlackHole, Reject, Local). */
type Route = Checked<"vnm.routing.v1.Route">;

/** A Normal route needs its next hop (port and gateway); the other types must not carry one. */
function nextHopRule(r: Route): void {
  const violations: Violation[] = [];
  for (const property of ["nextHopPort", "nextHopGateway"] as const) {
    if (r.type === "Normal" && r[property] === undefined) violations.push({ property, message: "is required for a Normal route" });
    if (r.type !== "Normal" && r[property] !== undefined) violations.push({ property, message: `must not be set for a ${r.type} route` });
  }
  if (violations.length > 0) throw ApiError.invalid(violations);
}

/** The router a path names: a UUID, else the path names nothing. */
function routerOf(req: Record<string, unknown>): string {
  const id = req["routerId"];
  if (!isUuid(id)) throw ApiError.notFound(`There is no Router with ID ${String(id)}.`);
  return id.toLowerCase();
}

export const routes = new Resource({
  proto: "vnm.routing.v1.Route",
  table: "routes",
  // Listed and created under /routers/{routerId}; a body's routerId is ignored (read-only).
  key: { scope: (req) => ({ router_id: routerOf(req) }) },
  columns: (r, req) => ({
    router_id: routerOf(req),
    type: r.type,
    dst_network_addr: r.dstNetworkAddr,
    dst_network_length: r.dstNetworkLength,
    src_network_addr: r.srcNetworkAddr,
    src_network_length: r.srcNetworkLength,
    next_hop_gateway: r.nextHopGateway ?? null,
    next_hop_port: r.nextHopPort ?? null,
    weight: r.weight,
  }),
  validate: (_q, r) => nextHopRule(r),
  render: (r: RouteRow) => ({
    id: r.id,
    routerId: r.router_id,
    type: r.type,
    dstNetworkAddr: r.dst_network_addr,
    dstNetworkLength: r.dst_network_length,
    srcNetworkAddr: r.src_network_addr,
    srcNetworkLength: r.src_network_length,
    nextHopGateway: r.next_hop_gateway,
    nextHopPort: r.next_hop_port,
    weight: r.weight,
    learned: r.learned,
  }),
});
