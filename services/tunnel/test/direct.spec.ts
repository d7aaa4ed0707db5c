// The tunnel service reached directly over gRPC (no gateway): it checks what the gateway would
// have, and keeps its kinds to administrators.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;

beforeAll(async () => {
  svc = await directService("tunnel");
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a VTEP with a bad address, port and zone, naming each field", async () => {
  const r = await svc.call("vnm.tunnel.v1.VtepService", "CreateVtep", { vtep: { managementIp: "10.0.0.300", managementPort: 0, tunnelZoneId: "z" } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r).map((v) => v.property)).toEqual(["managementIp", "managementPort", "tunnelZoneId"]);
});

it("keeps tunnel zone names unique per type ignoring case", async () => {
  const create = (name: string, type: string) => svc.call("vnm.tunnel.v1.TunnelZoneService", "CreateTunnelZone", { tunnelZone: { name, type } });
  expect((await create("Core", "gre")).err).toBeNull();
  expect((await create("CORE", "gre")).err?.code).toBe(grpc.status.ALREADY_EXISTS);
  expect((await create("CORE", "vtep")).err).toBeNull();
});

it("serves administrators only", async () => {
  const tenantAdmin = svc.token({ role: "tenant_admin", tenantId: "acme" });
  expect((await svc.call("vnm.tunnel.v1.VtepService", "ListVteps", {}, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});
