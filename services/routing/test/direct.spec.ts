// The routing service reached directly over gRPC (no gateway): it checks its input and keeps
// its kinds to administrators without the gateway's help.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const ROUTER = "0000000a-0000-4000-8000-000000000001";

beforeAll(async () => {
  svc = await directService("routing");
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

it("refuses a malformed ?port= filter, naming it", async () => {
  const r = await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", { port: "nope" });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([{ property: "port", message: "must be a UUID" }]);
});

it("serves administrators only", async () => {
  const tenantAdmin = svc.token({ role: "tenant_admin", tenantId: "acme" });
  expect((await svc.call("vnm.routing.v1.RouteService", "ListRouterRoutes", { routerId: ROUTER }, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
  expect((await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", {}, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});
