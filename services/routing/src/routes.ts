// Route (v1): created under its router (the path's), read and deleted at /routes/{id}, never
// changed. A Normal route needs its next hop (port and gateway); the other types must not
// carry one. Routers and ports are only referenced here: their ids are syntax-checked.
import { ApiError, int, ipv4, isUuid, Resource, uuid } from "@vnm/kit";
import { z } from "zod";

const TYPES = ["Normal", "BlackHole", "Reject", "Local"] as const;

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
}

const input = z
  .object({
    id: uuid().optional(),
    type: z.enum(TYPES, { error: `must be one of ${TYPES.join(", ")}` }),
    dstNetworkAddr: ipv4(),
    dstNetworkLength: int(0, 32),
    srcNetworkAddr: ipv4(),
    srcNetworkLength: int(0, 32),
    nextHopGateway: ipv4().optional(),
    nextHopPort: uuid().optional(),
    weight: int(0, 2 ** 31 - 1),
  })
  .superRefine((r, ctx) => {
    for (const field of ["nextHopPort", "nextHopGateway"] as const) {
      if (r.type === "Normal" && r[field] === undefined) ctx.addIssue({ code: "custom", path: [field], message: "is required for a Normal route" });
      if (r.type !== "Normal" && r[field] !== undefined) ctx.addIssue({ code: "custom", path: [field], message: `must not be set for a ${r.type} route` });
    }
  });

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
  input,
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
    learned: false,
  }),
});
