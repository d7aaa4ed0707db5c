// Tunnel zones and VTEPs end to end (docs/decisions.md, "Tunnel zones and VTEPs"): the tunnel service behind the gateway, real
// Postgres, NATS, Redis, and real OVSDB servers standing in for the devices.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, httpClient, openFeed, useStack, waitFor, expectServiceLossAndReturn } from "../harness/harness.ts";
import { OvsdbServer } from "../harness/ovsdb-server.ts";

const ZONE = "application/vnd.org.service.TunnelZone-v1+json";
const VTEP = "application/vnd.org.service.VTEP-v2+json";
const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
let n = 0;
const unique = (base: string) => `${base}-${++n}`;
const zone = async (type = "vtep") => (await http("POST", "/tunnel_zones", { name: unique("z"), type })).json;

describe("tunnel zones", () => {
  it("full CRUD; hosts is an empty list; in the root document", async () => {
    const r = await http("POST", "/tunnel_zones", { name: "Zone-A", type: "gre" }, { "content-type": ZONE });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ name: "Zone-A", type: "gre" });
    expect((await http("GET", r.json.hosts)).json).toEqual([]);
    const put = await http("PUT", r.json.uri, { name: "Zone-B", type: "vxlan" });
    expect(put.json).toMatchObject({ name: "Zone-B", type: "vxlan" });
    expect((await http("DELETE", r.json.uri)).status).toBe(204);
    expectError(await http("GET", r.json.hosts), 404);
    expect((await http("GET", "/")).json.tunnelZones).toMatch(/\/tunnel_zones$/);
  });

  it("refuse a bad name or type with 400 naming the field", async () => {
    for (const [body, property] of [
      [{ type: "gre" }, "name"],
      [{ name: "", type: "gre" }, "name"],
      [{ name: "x".repeat(256), type: "gre" }, "name"],
      [{ name: "ok" }, "type"],
      [{ name: "ok", type: "GRE" }, "type"],
      [{ name: "ok", type: "geneve" }, "type"],
    ] as const) {
      const r = await http("POST", "/tunnel_zones", body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    }
  });

  it("names are unique per type ignoring case: 409 on POST and on a PUT to a taken name, never against itself", async () => {
    const name = unique("Edge");
    const a = await http("POST", "/tunnel_zones", { name, type: "gre" });
    expectError(await http("POST", "/tunnel_zones", { name: name.toUpperCase(), type: "gre" }), 409);
    expect((await http("POST", "/tunnel_zones", { name: name.toUpperCase(), type: "vxlan" })).status).toBe(201);
    const b = await http("POST", "/tunnel_zones", { name: unique("other"), type: "gre" });
    expectError(await http("PUT", b.json.uri, { name: name.toLowerCase(), type: "gre" }), 409);
    expect((await http("PUT", a.json.uri, { name: name.toLowerCase(), type: "gre" })).status).toBe(200);
  });

  it("parallel identical names differing only in case: exactly one 201", async () => {
    const name = unique("race");
    const variants = [name, name.toUpperCase(), `${name[0]!.toUpperCase()}${name.slice(1)}`, name, name.toUpperCase(), name];
    const all = await Promise.all(variants.map((v) => http("POST", "/tunnel_zones", { name: v, type: "vxlan" })));
    expect(all.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });
});

describe("VTEPs", () => {
  let device: OvsdbServer;
  let vtepZone: { id: string };

  beforeAll(async () => {
    device = await OvsdbServer.create();
    device.ctl("add-ps", "sw-one");
    device.ctl("set", "Physical_Switch", "sw-one", "management_ips=127.0.0.1", "tunnel_ips=[\"10.9.0.1\",\"10.9.0.2\"]", "description=first");
    device.ctl("add-port", "sw-one", "eth1");
    device.ctl("add-port", "sw-one", "eth0");
    vtepZone = await zone();
  });

  afterAll(async () => {
    await device.destroy();
  });

  it("reads the device: connected, with its name, description, tunnel IPs and ports", async () => {
    const r = await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: vtepZone.id }, { "content-type": VTEP });
    expect(r.status).toBe(201);
    expect(r.json.vtepBindingTemplate).toBe(`${r.json.uri}/bindings/{portName}/{vlanId}`);
    await waitFor("connected", async () => (await http("GET", r.json.uri)).json.connectionState === "connected", 10_000);
    const v = (await http("GET", r.json.uri)).json;
    expect(v).toMatchObject({ name: "sw-one", description: "first", tunnelIpAddrs: ["10.9.0.1", "10.9.0.2"], managementIp: "127.0.0.1" });
    expect((await http("GET", v.ports)).json).toEqual([
      { name: "eth0", description: "", uri: `${v.uri}/ports/eth0`, vtep: v.uri },
      { name: "eth1", description: "", uri: `${v.uri}/ports/eth1`, vtep: v.uri },
    ]);
    expect((await http("GET", v.bindings)).json).toEqual([]);
    expect(device.sessions()).toBe(1);
  });

  it("follows the device: a change shows within a second, a stop is disconnected, a restart connected again", async () => {
    const v = (await http("GET", "/vteps")).json.find((x: { managementPort: number }) => x.managementPort === device.port);
    const feed = await openFeed(fx.gw, fx.stack.adminToken);
    device.ctl("set", "Physical_Switch", "sw-one", "description=changed");
    const changedAt = Date.now();
    await waitFor("the new description", async () => (await http("GET", v.uri)).json.description === "changed", 5_000);
    expect(Date.now() - changedAt).toBeLessThan(1_000);
    await waitFor("the change on /events", async () => feed.events.some((e) => e.data.id === v.id && e.event === "updated"), 5_000);
    await feed.close();
    await device.stop();
    await waitFor("disconnected", async () => (await http("GET", v.uri)).json.connectionState === "disconnected", 10_000);
    await device.start();
    await waitFor("connected again", async () => (await http("GET", v.uri)).json.connectionState === "connected", 15_000);
  });

  it("is an error when something answers but not as this VTEP", async () => {
    // An OVSDB whose switch has another management address.
    const elsewhere = await OvsdbServer.create();
    elsewhere.ctl("add-ps", "sw-elsewhere");
    elsewhere.ctl("set", "Physical_Switch", "sw-elsewhere", "management_ips=192.0.2.99");
    const other = await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: elsewhere.port, tunnelZoneId: vtepZone.id });
    expect(other.status).toBe(201);
    await waitFor("error", async () => (await http("GET", other.json.uri)).json.connectionState === "error", 10_000);
    // It says why (connectionError), in the VTEP and in the list.
    expect((await http("GET", other.json.uri)).json.connectionError).toBe("the device has no Physical_Switch whose management_ips hold 127.0.0.1");
    expect((await http("GET", "/vteps")).json.find((x: { id: string }) => x.id === other.json.id).connectionError).toContain("no Physical_Switch");
    // The switch configured for it: connected, without a new session, and the reason cleared.
    elsewhere.ctl("set", "Physical_Switch", "sw-elsewhere", "management_ips=127.0.0.1");
    await waitFor("connected", async () => (await http("GET", other.json.uri)).json.connectionState === "connected", 5_000);
    expect((await http("GET", other.json.uri)).json.connectionError ?? null).toBeNull();
    await elsewhere.destroy();
    // Something that is not OVSDB at all: the gateway's own HTTP port.
    const http2 = await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: Number(new URL(fx.gw).port), tunnelZoneId: vtepZone.id });
    await waitFor("error", async () => (await http("GET", http2.json.uri)).json.connectionState === "error", 10_000);
    expect((await http("GET", http2.json.uri)).json.connectionError).toMatch(/^session dropped: .+ \([a-z_]+\)$/);
    // Nothing listening at all is not an error but disconnected.
    const nothing = await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: 1, tunnelZoneId: vtepZone.id });
    await waitFor("disconnected", async () => (await http("GET", nothing.json.uri)).json.connectionState === "disconnected", 10_000);
    expect((await http("GET", nothing.json.uri)).json.connectionError ?? null).toBeNull();
    for (const r of [other, http2, nothing]) expect((await http("DELETE", r.json.uri)).status).toBe(204);
  });

  it("refuses bad fields, a zone that is missing or not of type vtep (400), and a taken address (409)", async () => {
    const base = { managementIp: "192.0.2.10", managementPort: 6632, tunnelZoneId: vtepZone.id };
    for (const [over, property] of [
      [{ managementIp: "10.0.0.300" }, "managementIp"],
      [{ managementIp: undefined }, "managementIp"],
      [{ managementPort: 0 }, "managementPort"],
      [{ managementPort: 65536 }, "managementPort"],
      [{ tunnelZoneId: "nope" }, "tunnelZoneId"],
      [{ tunnelZoneId: "00000000-0000-4000-8000-0000000000f1" }, "tunnelZoneId"],
      [{ tunnelZoneId: (await zone("gre")).id }, "tunnelZoneId"],
    ] as const) {
      const r = await http("POST", "/vteps", { ...base, ...over });
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    }
    // Addresses that would point the service at this host's or the link's own ports (the stack
    // allows 127.0.0.0/8 for its test devices, so only the rest is refused here).
    for (const managementIp of ["0.0.0.0", "169.254.169.254", "fe80::1", "224.0.0.1", "::1"]) {
      const r = await http("POST", "/vteps", { ...base, managementIp });
      expectError(r, 400);
      expect(r.json.violations).toEqual([{ property: "managementIp", message: expect.stringMatching(/^must not be .*VNM_VTEP_ALLOWED_NETWORKS$/) }]);
    }
    // One device, one address: an IPv4-mapped IPv6 address is stored as IPv4.
    const mapped = await http("POST", "/vteps", { ...base, managementIp: "::ffff:127.0.0.1", managementPort: 6650 });
    expect(mapped.json.managementIp).toBe("127.0.0.1");
    expectError(await http("POST", "/vteps", { ...base, managementIp: "127.0.0.1", managementPort: 6650 }), 409);
    expect((await http("DELETE", mapped.json.uri)).status).toBe(204);
    const v6 = await http("POST", "/vteps", { ...base, managementIp: "2001:DB8:0:0:0:0:0:1" });
    expect(v6.json.managementIp).toBe("2001:db8::1");
    expectError(await http("POST", "/vteps", { ...base, managementIp: "2001:db8::1" }), 409);
    const parallel = await Promise.all(Array.from({ length: 5 }, () => http("POST", "/vteps", { ...base, managementPort: 6640 })));
    expect(parallel.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const put = await http("PUT", v6.json.uri, base);
    expectError(put, 405);
    expect(put.headers.get("allow")).toBe("GET, DELETE");
    for (const r of [v6, parallel.find((x) => x.status === 201)!]) await http("DELETE", r.json.uri);
  });

  it("a zone a VTEP uses can be neither deleted nor retyped (409 naming the VTEP)", async () => {
    const z = await zone();
    const v = await http("POST", "/vteps", { managementIp: "192.0.2.20", managementPort: 6632, tunnelZoneId: z.id });
    const del = await http("DELETE", `/tunnel_zones/${z.id}`);
    expectError(del, 409);
    expect(del.json.message).toContain(v.json.id);
    expectError(await http("PUT", `/tunnel_zones/${z.id}`, { name: "retyped", type: "gre" }), 409);
    expect((await http("DELETE", v.json.uri)).status).toBe(204);
    expect((await http("DELETE", `/tunnel_zones/${z.id}`)).status).toBe(204);
  });

  it("deleting a VTEP ends its session", async () => {
    const v = (await http("GET", "/vteps")).json.find((x: { managementPort: number }) => x.managementPort === device.port);
    expect(device.sessions()).toBe(1);
    expect((await http("DELETE", v.uri)).status).toBe(204);
    await waitFor("no session left", async () => device.sessions() === 0, 10_000);
  });
});

describe("the rules of each field (tunnel.proto), as the OpenAPI document states them and the service enforces them", () => {
  /** A field's schema keywords, whatever alternatives (a digit string for an integer, null) the document adds. */
  const keywords = (s: { anyOf?: object[] }) => Object.assign({}, ...(s.anyOf ?? []), s);
  const props = async (name: string) => (await http("GET", "/openapi.json")).json.components.schemas[name].properties;

  it("tunnel zones: a name of 1 to 255 characters of text, a type of gre, vxlan or vtep", async () => {
    const z = await props("vnm.tunnel.v1.TunnelZone");
    expect(keywords(z.id)).toMatchObject({ format: "uuid" });
    expect(keywords(z.name)).toMatchObject({ minLength: 1, maxLength: 255, pattern: "^[^\\u0000]*$" });
    expect(keywords(z.type).enum).toEqual(expect.arrayContaining(["gre", "vxlan", "vtep"]));
    for (const [body, property, message] of [
      [{ name: "", type: "gre" }, "name", "must be at least 1 characters"],
      [{ name: "x".repeat(256), type: "gre" }, "name", "must be at most 255 characters"],
      [{ name: "ok", type: "geneve" }, "type", "must be in list [gre, vxlan, vtep]"],
    ] as const) {
      const r = await http("POST", "/tunnel_zones", body);
      expectError(r, 400);
      expect(r.json.violations, message).toEqual([{ property, message }]);
    }
  });

  it("VTEPs: an IP address, a port in [1, 65535], a UUID zone", async () => {
    const v = await props("vnm.tunnel.v1.Vtep");
    expect(keywords(v.managementIp).anyOf).toEqual(expect.arrayContaining([{ format: "ipv4" }, { format: "ipv6" }]));
    expect(keywords(v.managementPort)).toMatchObject({ minimum: 1, maximum: 65535 });
    expect(keywords(v.tunnelZoneId)).toMatchObject({ format: "uuid" });
    const zoneId = (await zone()).id;
    for (const [over, property, message] of [
      [{ managementIp: "10.0.0.300" }, "managementIp", "must be a valid IP address"],
      [{ managementPort: 65536 }, "managementPort", "must be greater than or equal to 1 and less than or equal to 65535"],
    ] as const) {
      const r = await http("POST", "/vteps", { managementIp: "192.0.2.30", managementPort: 6632, tunnelZoneId: zoneId, ...over });
      expectError(r, 400);
      expect(r.json.violations, message).toEqual([{ property, message }]);
    }
  });
});

describe("two replicas", () => {
  it("watch each VTEP exactly once; when the holder is killed the other takes over within 10 s", async () => {
    const device = await OvsdbServer.create();
    try {
      device.ctl("add-ps", "sw-two");
      device.ctl("set", "Physical_Switch", "sw-two", "management_ips=127.0.0.1");
      const replica = await fx.stack.startReplica("tunnel");
      const gw2 = await fx.stack.startGateway({ VNM_TUNNEL_ADDR: `${fx.stack.addrs.get("tunnel")},${replica}` });
      const z = (await http("POST", `${gw2}/tunnel_zones`, { name: unique("rz"), type: "vtep" })).json;
      const v = (await http("POST", `${gw2}/vteps`, { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: z.id })).json;
      await waitFor("connected", async () => (await http("GET", v.uri)).json.connectionState === "connected", 10_000);
      await new Promise((r) => setTimeout(r, 4_500)); // two more looks by each replica
      expect(device.sessions()).toBe(1);
      const [holder] = device.clientPids();
      expect(holder).toBeDefined();
      process.kill(holder!, "SIGKILL");
      const killedAt = Date.now();
      // The other replica's session: a live process holds it (a dead one's socket may linger a moment).
      await waitFor("another replica's session", async () => device.sessions() === 1 && device.clientPids().length === 1 && device.clientPids()[0] !== holder, 10_000);
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      for (let i = 0; i < 5; i++) {
        expect(device.sessions(), `sessions ${i * 500} ms after the takeover (clients: ${device.clientPids().join(", ") || "none"})`).toBe(1);
        await new Promise((r) => setTimeout(r, 500));
      }
      expect((await http("GET", `${gw2}/vteps/${v.id}`)).json.connectionState).toBe("connected");
    } finally {
      await device.destroy();
    }
  });
});

describe("like every other kind", () => {
  it("are for administrators only", async () => {
    const name = `ta-${fx.stack.id}`;
    await http("POST", "/users", { name, password: "tenant-password-1", tenantId: "T", roles: ["tenant_admin"] });
    const token = await fx.stack.login(fx.gw, name, "tenant-password-1");
    expectError(await http("GET", "/tunnel_zones", undefined, { "x-auth-token": token }), 403);
    expectError(await http("GET", "/vteps", undefined, { "x-auth-token": token }), 403);
  });

  it("the tunnel service lost: 503 naming it, the rest works, and back unaided", async () => {
    await expectServiceLossAndReturn(fx, "tunnel", "/tunnel_zones");
  });
});
