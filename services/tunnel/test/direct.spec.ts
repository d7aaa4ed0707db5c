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

it("refuses management addresses that name no device, this host or the local link, unless allowed", async () => {
  const zone = (await svc.call("vnm.tunnel.v1.TunnelZoneService", "CreateTunnelZone", { tunnelZone: { name: "policy", type: "vtep" } })).res;
  const create = (managementIp: string) => svc.call("vnm.tunnel.v1.VtepService", "CreateVtep", { vtep: { managementIp, managementPort: 6640, tunnelZoneId: zone.id } });
  for (const ip of ["0.0.0.0", "::", "224.0.0.5", "255.255.255.255", "127.0.0.1", "::1", "::ffff:127.0.0.1", "169.254.169.254", "fe80::1"]) {
    const r = await create(ip);
    expect(r.err?.code, ip).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r), ip).toEqual([{ property: "managementIp", message: expect.stringMatching(/VNM_VTEP_ALLOWED_NETWORKS/) }]);
  }
  // An IPv4-mapped IPv6 address is the IPv4 device: stored so, and a second registration is a 409.
  const mapped = await create("::ffff:192.0.2.40");
  expect(mapped.res.managementIp).toBe("192.0.2.40");
  expect((await create("192.0.2.40")).err?.code).toBe(grpc.status.ALREADY_EXISTS);
  // Nothing was written for the refused ones.
  const all = (await svc.call("vnm.tunnel.v1.VtepService", "ListVteps", {})).res.items as { managementIp: string }[];
  expect(all.map((v) => v.managementIp)).toEqual(["192.0.2.40"]);
});

it("does not start with an allowed network that is not one, naming it", async () => {
  await expect(directService("tunnel", { VNM_VTEP_ALLOWED_NETWORKS: "127.0.0.0/8,lab" })).rejects.toThrow(/VNM_VTEP_ALLOWED_NETWORKS.*"lab" is not a network in CIDR form/);
});
