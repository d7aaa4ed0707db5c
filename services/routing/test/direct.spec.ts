// The routing service reached directly over gRPC (no gateway): it checks its input and keeps
// its kinds to administrators without the gateway's help.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let svc: DirectService;
const ROUTER = "0000000a-0000-4000-8000-000000000001";

beforeAll(async () => {
  svc = await directService("routing");
  // Routes live on real routers; a Normal route's next hop is a port of its router.
  expect((await svc.call("vnm.routing.v1.RouterService", "CreateRouter", { router: { id: ROUTER } })).err).toBeNull();
  expect((await svc.call("vnm.routing.v1.PortService", "CreateRouterPort", { routerId: ROUTER, port: { id: "0000000b-0000-4000-8000-0000000000ff" } })).err).toBeNull();
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a Normal route without its next hop, naming both fields", async () => {
  const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", {
    routerId: ROUTER,
    route: { type: "Normal", dstNetworkAddr: "10.0.0.0", dstNetworkLength: 8, srcNetworkAddr: "0.0.0.0", srcNetworkLength: 0, weight: 1 },
  });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r).map((v) => v.property)).toEqual(["nextHopPort", "nextHopGateway"]);
});

it("a route on a router that does not exist is NOT_FOUND, whatever its body", async () => {
  const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", { routerId: "0000000a-0000-4000-8000-0000000000ee", route: { type: "Nope" } });
  expect(r.err?.code).toBe(grpc.status.NOT_FOUND);
});

it("refuses a malformed ?port= filter, naming it", async () => {
  const r = await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", { port: "nope" });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([{ property: "port", message: "must be a valid UUID" }]);
});

it("serves administrators only", async () => {
  const tenantAdmin = svc.token({ role: "tenant_admin", tenantId: "acme" });
  expect((await svc.call("vnm.routing.v1.RouteService", "ListRouterRoutes", { routerId: ROUTER }, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
  expect((await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", {}, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});

describe("each field against routing.proto's rules, checked here without the gateway's help", () => {
  const route = (over: Record<string, unknown>) => ({
    routerId: ROUTER,
    route: { type: "Reject", dstNetworkAddr: "10.0.0.0", dstNetworkLength: 8, srcNetworkAddr: "0.0.0.0", srcNetworkLength: 0, weight: 1, ...over },
  });
  const insertion = (over: Record<string, unknown>) => ({
    l2Insertion: { mac: "02:AB:00:00:00:01", portId: "0000000C-0000-4000-8000-0000000000A1", srvPortId: "0000000c-0000-4000-8000-0000000000a2", position: 3, ...over },
  });

  it("a route: type in its list, addresses IPv4, lengths in [0, 32], weight not negative, a UUID next-hop port", async () => {
    const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "Fip64", dstNetworkAddr: "10.1.0", srcNetworkAddr: "::1", dstNetworkLength: 33, srcNetworkLength: -1, weight: -1 }));
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual([
      { property: "dstNetworkAddr", message: "must be a valid IPv4 address" },
      { property: "dstNetworkLength", message: "must be greater than or equal to 0 and less than or equal to 32" },
      { property: "srcNetworkAddr", message: "must be a valid IPv4 address" },
      { property: "srcNetworkLength", message: "must be greater than or equal to 0 and less than or equal to 32" },
      { property: "type", message: "must be in list [Normal, BlackHole, Reject, Local]" },
      { property: "weight", message: "must be greater than or equal to 0" },
    ]);
    const port = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "Normal", nextHopPort: "port-1", nextHopGateway: "gw" }));
    expect(svc.violations(port)).toEqual([
      { property: "nextHopGateway", message: "must be a valid IPv4 address" },
      { property: "nextHopPort", message: "must be a valid UUID" },
    ]);
    const missing = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", { routerId: ROUTER, route: { dstNetworkAddr: "10.0.0.0" } });
    expect(svc.violations(missing).map((v) => v.property)).toEqual(["dstNetworkLength", "srcNetworkAddr", "srcNetworkLength", "type", "weight"]);
    expect(svc.violations(missing)[0]?.message).toBe("value is required");
  });

  it("a route's next hop against its type: named, with its message, once every field is well formed", async () => {
    const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "BlackHole", nextHopGateway: "10.0.0.1" }));
    expect(svc.violations(r)).toEqual([{ property: "nextHopGateway", message: "must not be set for a BlackHole route" }]);
    const ok = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "Normal", nextHopGateway: "10.0.0.1", nextHopPort: "0000000B-0000-4000-8000-0000000000FF" }));
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ type: "Normal", nextHopPort: "0000000b-0000-4000-8000-0000000000ff" });
  });

  it("an L2 insertion: a MAC, UUID ports, a position, a VLAN in [0, 4095]; MAC and ports kept in lower case", async () => {
    const r = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({ mac: "02:ab:00:00:00", portId: "p", position: undefined, vlan: 4096 }));
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual([
      { property: "mac", message: "must be six groups of two hex digits separated by ':', e.g. 02:00:00:00:00:01" },
      { property: "portId", message: "must be a valid UUID" },
      { property: "position", message: "value is required" },
      { property: "vlan", message: "must be greater than or equal to 0 and less than or equal to 4095" },
    ]);
    const ok = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({}));
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ mac: "02:ab:00:00:00:01", portId: "0000000c-0000-4000-8000-0000000000a1", failOpen: false, vlan: 0 });
  });

  it("an L2 insertion's service port is not its protected port, however the two ids are spelled", async () => {
    const r = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({ portId: "0000000C-0000-4000-8000-0000000000B1", srvPortId: "0000000c-0000-4000-8000-0000000000b1" }));
    expect(svc.violations(r)).toEqual([{ property: "srvPortId", message: "must not be the protected port (portId)" }]);
  });

  it("?srv_port= is a UUID too, and a filter in capitals finds the insertion", async () => {
    const bad = await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", { srv_port: "nope" });
    expect(svc.violations(bad)).toEqual([{ property: "srv_port", message: "must be a valid UUID" }]);
    const made = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({ portId: "0000000c-0000-4000-8000-0000000000c1", srvPortId: "0000000c-0000-4000-8000-0000000000c2" }));
    expect(made.err).toBeNull();
    const found = await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", { srv_port: "0000000C-0000-4000-8000-0000000000C2" });
    expect((found.res as { items: { id: string }[] }).items.map((i) => i.id)).toEqual([(made.res as { id: string }).id]);
  });
});
