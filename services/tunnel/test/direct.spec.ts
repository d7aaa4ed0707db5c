// The tunnel service reached directly over gRPC (no gateway): it checks what the gateway would
// have, and keeps its kinds to administrators.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

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

describe("each field against tunnel.proto's rules, checked here without the gateway's help", () => {
  const createZone = (tunnelZone: Record<string, unknown>) => svc.call("vnm.tunnel.v1.TunnelZoneService", "CreateTunnelZone", { tunnelZone });
  const createVtep = (vtep: Record<string, unknown>) => svc.call("vnm.tunnel.v1.VtepService", "CreateVtep", { vtep });

  it("a tunnel zone: a UUID id, a name of 1 to 255 characters of text, a type of gre, vxlan or vtep", async () => {
    const bad = await createZone({ id: "zone-1", name: "x".repeat(256), type: "GRE" });
    expect(bad.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(bad)).toEqual([
      { property: "id", message: "must be a valid UUID" },
      { property: "name", message: "must be at most 255 characters" },
      { property: "type", message: "must be in list [gre, vxlan, vtep]" },
    ]);
    expect(svc.violations(await createZone({ name: "", type: "vtep" }))).toEqual([{ property: "name", message: "must be at least 1 characters" }]);
    expect(svc.violations(await createZone({ name: "a\u0000b", type: "vtep" }))).toEqual([{ property: "name", message: "must be valid Unicode text without NUL characters" }]);
    expect(svc.violations(await createZone({}))).toEqual([
      { property: "name", message: "value is required" },
      { property: "type", message: "value is required" },
    ]);
    // 255 characters (code points, not UTF-16 units), and the id kept in lower case.
    const ok = await createZone({ id: "0000000A-0000-4000-8000-00000000ABCD", name: "😀".repeat(255), type: "vxlan" });
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ id: "0000000a-0000-4000-8000-00000000abcd", name: "😀".repeat(255), type: "vxlan" });
  });

  it("a tunnel zone VTEPs use keeps its type: 409 naming them on a PUT to another", async () => {
    const z = (await createZone({ name: "in-use", type: "vtep" })).res;
    const v = (await createVtep({ managementIp: "192.0.2.60", managementPort: 6640, tunnelZoneId: z.id })).res;
    const put = await svc.call("vnm.tunnel.v1.TunnelZoneService", "UpdateTunnelZone", { id: z.id, tunnelZone: { name: "in-use", type: "gre" } });
    expect(put.err?.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(put.err?.details).toContain(`${v.id} (192.0.2.60)`);
  });

  it("a VTEP: an IP address, a port in [1, 65535], a UUID zone, each required", async () => {
    const bad = await createVtep({ id: "v", managementIp: "192.0.2", managementPort: 65536, tunnelZoneId: "zone" });
    expect(bad.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(bad)).toEqual([
      { property: "id", message: "must be a valid UUID" },
      { property: "managementIp", message: "must be a valid IP address" },
      { property: "managementPort", message: "must be greater than or equal to 1 and less than or equal to 65535" },
      { property: "tunnelZoneId", message: "must be a valid UUID" },
    ]);
    expect(svc.violations(await createVtep({}))).toEqual([
      { property: "managementIp", message: "value is required" },
      { property: "managementPort", message: "value is required" },
      { property: "tunnelZoneId", message: "value is required" },
    ]);
  });

  it("a VTEP's zone exists and is of type vtep; its address has no zone; ids kept in lower case, IPv6 in RFC 5952 form", async () => {
    const gre = (await createZone({ name: "not-vtep", type: "gre" })).res;
    const vtep = (await createZone({ name: "for-vteps", type: "vtep" })).res;
    const base = { managementIp: "192.0.2.61", managementPort: 6640 };
    expect(svc.violations(await createVtep({ ...base, tunnelZoneId: "0000000a-0000-4000-8000-0000000000f1" }))).toEqual([
      { property: "tunnelZoneId", message: "must name an existing tunnel zone; there is none with ID 0000000a-0000-4000-8000-0000000000f1" },
    ]);
    expect(svc.violations(await createVtep({ ...base, tunnelZoneId: gre.id }))).toEqual([{ property: "tunnelZoneId", message: `must name a tunnel zone of type vtep; ${gre.id} is gre` }]);
    // An IPv6 address with a zone is an IP address, but no device's address this service can store.
    expect(svc.violations(await createVtep({ ...base, managementIp: "2001:db8::1%eth0", tunnelZoneId: vtep.id }))).toEqual([{ property: "managementIp", message: "must be an IPv4 or IPv6 address" }]);
    const ok = await createVtep({ managementIp: "2001:DB8:0:0:0:0:0:62", managementPort: 6640, tunnelZoneId: vtep.id.toUpperCase() });
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ managementIp: "2001:db8::62", tunnelZoneId: vtep.id });
    const again = await createVtep({ managementIp: "2001:db8::62", managementPort: 6640, tunnelZoneId: vtep.id });
    expect(again.err?.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(again.err?.details).toBe("A VTEP with management address 2001:db8::62 and port 6640 already exists.");
  });
});
