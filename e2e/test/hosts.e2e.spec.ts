// Hosts, tunnel zone hosts and host-interface-port bindings end to end (topology.md §6, §9):
// hosts and zone memberships in the tunnel service, bindings (a port's host columns) in the
// routing service, behind the gateway, with real Postgres, NATS and Redis.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { expectError, expectServiceLossAndReturn, httpClient, useStack, waitFor } from "../harness/harness.ts";

const HOST = "application/vnd.org.service.Host-v3+json";
const HOSTS = "application/vnd.org.service.collection.Host-v3+json";
const TZH = "application/vnd.org.service.TunnelZoneHost-v1+json";
const TZHS = "application/vnd.org.service.collection.TunnelZoneHost-v1+json";
const GRE_TZH = "application/vnd.org.service.GreTunnelZoneHost-v1+json";
const GRE_TZHS = "application/vnd.org.service.collection.GreTunnelZoneHost-v1+json";
const BINDING = "application/vnd.org.service.HostInterfacePort-v1+json";
const BINDINGS = "application/vnd.org.service.collection.HostInterfacePort-v1+json";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
let n = 0;
const unique = (base: string) => `${base}-${++n}`;
const violations = (r: { json: { violations?: { property: string }[] } }) => (r.json.violations ?? []).map((v) => v.property);

const newHost = async (body: Record<string, unknown> = {}) => {
  const r = await http("POST", "/hosts", { name: unique("host"), ...body });
  expect(r.status).toBe(201);
  return r.json;
};
const newZone = async (type = "vxlan") => (await http("POST", "/tunnel_zones", { name: unique("zone"), type })).json;
const join = async (zone: { id: string }, host: { id: string }, ipAddress = "10.0.0.1") => {
  const r = await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: host.id, ipAddress });
  expect(r.status).toBe(201);
  return r.json;
};

describe("hosts", () => {
  it("POST registers a host: 201, Location, defaults; GET, the list and the root document show it", async () => {
    const id = randomUUID();
    const r = await http("POST", "/hosts", { id, name: "compute-1", addresses: ["10.1.0.5", "2001:DB8:0:0:0:0:0:1"] }, { "content-type": HOST });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toContain("Host-v3");
    expect(r.headers.get("location")).toBe(`${fx.gw}/hosts/${id}`);
    expect(r.json).toEqual({
      id,
      name: "compute-1",
      addresses: ["10.1.0.5", "2001:db8::1"],
      alive: false,
      floodingProxyWeight: 1,
      containerWeight: 1,
      containerLimit: -1,
      enforceContainerLimit: false,
      hostInterfaces: [],
      uri: `${fx.gw}/hosts/${id}`,
      ports: `${fx.gw}/hosts/${id}/ports`,
    });
    expect((await http("GET", r.json.uri, undefined, { accept: HOST })).json).toEqual(r.json);
    const list = await http("GET", "/hosts", undefined, { accept: HOSTS });
    expect(list.headers.get("content-type")).toContain("collection.Host-v3");
    expect(list.json.map((h: { id: string }) => h.id)).toContain(id);
    const root = (await http("GET", "/")).json;
    expect(root.hosts).toBe(`${fx.gw}/hosts`);
    expect(root.hostTemplate).toBe(`${fx.gw}/hosts/{id}`);
    // The host's ports: an empty list of bindings.
    expect((await http("GET", r.json.ports)).json).toEqual([]);
  });

  it("api.add_host(): a body with no addresses gives []; no name is allowed", async () => {
    const r = await http("POST", "/hosts", {});
    expect(r.status).toBe(201);
    expect(r.json.addresses).toEqual([]);
    expect(r.json.name).toBeNull();
  });

  it("an id in use: 409", async () => {
    const h = await newHost();
    expectError(await http("POST", "/hosts", { id: h.id, name: "again" }), 409);
  });

  it("bad values: 400 naming the field", async () => {
    for (const [body, property] of [
      [{ id: "not-a-uuid" }, "id"],
      [{ addresses: ["10.0.0.300"] }, "addresses"],
      [{ addresses: ["fe80::1%eth0"] }, "addresses"],
      [{ addresses: "10.0.0.1" }, "addresses"],
      [{ name: "x".repeat(256) }, "name"],
      [{ floodingProxyWeight: 65536 }, "floodingProxyWeight"],
      [{ floodingProxyWeight: -1 }, "floodingProxyWeight"],
      [{ containerWeight: -1 }, "containerWeight"],
      [{ containerLimit: -2 }, "containerLimit"],
    ] as const) {
      const r = await http("POST", "/hosts", body);
      expectError(r, 400);
      expect(violations(r), JSON.stringify(body)).toEqual([property]);
    }
  });

  it("PUT changes only the four weights; name and addresses stay; an omitted weight returns to its default; out of range 400", async () => {
    const h = await newHost({ name: "keep-me", addresses: ["10.2.0.1"], floodingProxyWeight: 7, containerWeight: 3 });
    const put = await http("PUT", h.uri, { ...h, name: "renamed", addresses: ["10.9.9.9"], floodingProxyWeight: 0, containerLimit: 12, enforceContainerLimit: true, containerWeight: undefined });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ name: "keep-me", addresses: ["10.2.0.1"], floodingProxyWeight: 0, containerWeight: 1, containerLimit: 12, enforceContainerLimit: true });
    expect((await http("GET", h.uri)).json).toEqual(put.json);
    const bad = await http("PUT", h.uri, { floodingProxyWeight: 70000 });
    expectError(bad, 400);
    expect(violations(bad)).toEqual(["floodingProxyWeight"]);
    // A host registered without a name gets none from a PUT either.
    const nameless = (await http("POST", "/hosts", {})).json;
    expect((await http("PUT", nameless.uri, { name: "late" })).json.name).toBeNull();
    expectError(await http("PUT", `/hosts/${randomUUID()}`, {}), 404);
  });

  it("DELETE: 204, then 404; a host that is not there: 404", async () => {
    const h = await newHost();
    expect((await http("DELETE", h.uri)).status).toBe(204);
    expectError(await http("GET", h.uri), 404);
    expectError(await http("DELETE", h.uri), 404);
    expectError(await http("GET", h.ports), 404);
  });

  it("DELETE takes the host out of every tunnel zone", async () => {
    const h = await newHost();
    const [a, b] = [await newZone("gre"), await newZone("vxlan")];
    await join(a, h, "10.3.0.1");
    await join(b, h, "10.3.0.2");
    const other = await newHost();
    await join(a, other, "10.3.0.3");
    expect((await http("DELETE", h.uri)).status).toBe(204);
    expect((await http("GET", `/tunnel_zones/${a.id}/hosts`)).json.map((m: { hostId: string }) => m.hostId)).toEqual([other.id]);
    expect((await http("GET", `/tunnel_zones/${b.id}/hosts`)).json).toEqual([]);
    expectError(await http("GET", `/tunnel_zones/${a.id}/hosts/${h.id}`), 404);
  });
});

describe("tunnel zone hosts", () => {
  it("POST: 201 with Location under the zone; GET, the list; the representation's links", async () => {
    const zone = await newZone("vxlan");
    const h = await newHost();
    const r = await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: h.id, ipAddress: "192.168.7.1" }, { "content-type": TZH, accept: TZH });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toContain("TunnelZoneHost-v1");
    const uri = `${fx.gw}/tunnel_zones/${zone.id}/hosts/${h.id}`;
    expect(r.headers.get("location")).toBe(uri);
    expect(r.json).toEqual({ tunnelZoneId: zone.id, hostId: h.id, ipAddress: "192.168.7.1", uri, host: h.uri, tunnelZone: zone.uri });
    expect((await http("GET", uri)).json).toEqual(r.json);
    const list = await http("GET", zone.hosts, undefined, { accept: TZHS });
    expect(list.headers.get("content-type")).toContain("collection.TunnelZoneHost-v1");
    expect(list.json).toEqual([r.json]);
  });

  it("both media types: the Gre one on POST and in Accept, answered in kind; others refused", async () => {
    const zone = await newZone("gre");
    const h = await newHost();
    const r = await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: h.id, ipAddress: "10.4.0.1" }, { "content-type": GRE_TZH, accept: GRE_TZH });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toContain("GreTunnelZoneHost-v1");
    const item = await http("GET", r.json.uri, undefined, { accept: GRE_TZH });
    expect(item.headers.get("content-type")).toContain("GreTunnelZoneHost-v1");
    expect(item.json).toEqual(r.json);
    const list = await http("GET", zone.hosts, undefined, { accept: GRE_TZHS });
    expect(list.status).toBe(200);
    expect(list.headers.get("content-type")).toContain("collection.GreTunnelZoneHost-v1");
    // No Accept: the main type.
    expect((await http("GET", r.json.uri)).headers.get("content-type")).toContain("application/vnd.org.service.TunnelZoneHost-v1+json");
    expectError(await http("GET", r.json.uri, undefined, { accept: "application/vnd.org.service.VxlanTunnelZoneHost-v1+json" }), 406);
    expectError(await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: (await newHost()).id, ipAddress: "10.4.0.2" }, { "content-type": "application/vnd.org.service.GreTunnelZoneHost-v2+json" }), 415);
  });

  it("a host that does not exist: 404; a zone that does not exist: 404", async () => {
    const zone = await newZone();
    const missing = randomUUID();
    const r = await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: missing, ipAddress: "10.5.0.1" });
    expectError(r, 404);
    expect(r.json.message).toContain(missing);
    expectError(await http("POST", `/tunnel_zones/${randomUUID()}/hosts`, { hostId: (await newHost()).id, ipAddress: "10.5.0.1" }), 404);
    expectError(await http("GET", `/tunnel_zones/${randomUUID()}/hosts`), 404);
  });

  it("a host that is already a member: 409 with the error body (not MidoNet: empty)", async () => {
    const zone = await newZone();
    const h = await newHost();
    await join(zone, h);
    const r = await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: h.id, ipAddress: "10.6.0.9" });
    expectError(r, 409);
    expect(r.json.message).toContain(h.id);
  });

  it("parallel joins of one host to one zone: exactly one 201", async () => {
    const zone = await newZone();
    const h = await newHost();
    const all = await Promise.all([1, 2, 3, 4].map((i) => http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: h.id, ipAddress: `10.7.0.${i}` })));
    expect(all.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    expect((await http("GET", zone.hosts)).json).toHaveLength(1);
  });

  it("a join racing the host's delete: the host never stays a member of a zone after it is gone", async () => {
    for (let i = 0; i < 5; i++) {
      const zone = await newZone();
      const h = await newHost();
      const [joined, deleted] = await Promise.all([http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: h.id, ipAddress: "10.8.0.1" }), http("DELETE", h.uri)]);
      expect([201, 404]).toContain(joined.status);
      expect(deleted.status).toBe(204);
      expect((await http("GET", zone.hosts)).json).toEqual([]);
    }
  });

  it("ipAddress must be IPv4 and hostId a UUID; both required: 400 naming the field", async () => {
    const zone = await newZone();
    const h = await newHost();
    for (const [body, property] of [
      [{ hostId: h.id }, "ipAddress"],
      [{ hostId: h.id, ipAddress: "2001:db8::1" }, "ipAddress"],
      [{ hostId: h.id, ipAddress: "10.0.0.256" }, "ipAddress"],
      [{ ipAddress: "10.0.0.1" }, "hostId"],
      [{ hostId: "nope", ipAddress: "10.0.0.1" }, "hostId"],
    ] as const) {
      const r = await http("POST", `/tunnel_zones/${zone.id}/hosts`, body);
      expectError(r, 400);
      expect(violations(r), JSON.stringify(body)).toEqual([property]);
    }
  });

  it("DELETE: 204, then 404; a host that is not a member: 404; no PUT (405)", async () => {
    const zone = await newZone();
    const h = await newHost();
    const m = await join(zone, h);
    const put = await http("PUT", m.uri, { hostId: h.id, ipAddress: "10.0.0.2" });
    expectError(put, 405);
    expect(put.headers.get("allow")).toBeTruthy();
    expect((await http("DELETE", m.uri)).status).toBe(204);
    expectError(await http("GET", m.uri), 404);
    expectError(await http("DELETE", m.uri), 404);
    // The host is still there.
    expect((await http("GET", h.uri)).status).toBe(200);
  });

  it("a PUT of the zone keeps its members; deleting the zone removes them, the host stays", async () => {
    const zone = await newZone("gre");
    const h = await newHost();
    const m = await join(zone, h);
    expect((await http("PUT", zone.uri, { name: unique("renamed"), type: "gre" })).status).toBe(200);
    expect((await http("GET", zone.hosts)).json).toEqual([m]);
    expect((await http("DELETE", zone.uri)).status).toBe(204);
    expectError(await http("GET", m.uri), 404);
    expect((await http("GET", h.uri)).status).toBe(200);
  });
});

/** A host in a tunnel zone, ready for bindings. */
const zonedHost = async () => {
  const h = await newHost();
  await join(await newZone(), h);
  return h;
};
/** A port of a new bridge. */
const newPort = async () => {
  const bridge = (await http("POST", "/bridges", { name: unique("br") })).json;
  const r = await http("POST", `/bridges/${bridge.id}/ports`, {});
  expect(r.status).toBe(201);
  return r.json;
};
const bind = (host: { id: string }, portId: string, interfaceName?: string, headers: Record<string, string> = {}) =>
  http("POST", `/hosts/${host.id}/ports`, interfaceName === undefined ? { portId } : { portId, interfaceName }, headers);

describe("host-interface-port bindings", () => {
  it("POST: 201 with Location; the binding's representation; the port shows its host and interface; GET, the list", async () => {
    const h = await zonedHost();
    const port = await newPort();
    const r = await bind(h, port.id, "tap0", { "content-type": BINDING, accept: BINDING });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toContain("HostInterfacePort-v1");
    const uri = `${fx.gw}/hosts/${h.id}/ports/${port.id}`;
    expect(r.headers.get("location")).toBe(uri);
    expect(r.json).toEqual({ hostId: h.id, portId: port.id, interfaceName: "tap0", uri, host: h.uri, port: port.uri });
    expect((await http("GET", uri)).json).toEqual(r.json);
    const list = await http("GET", h.ports, undefined, { accept: BINDINGS });
    expect(list.headers.get("content-type")).toContain("collection.HostInterfacePort-v1");
    expect(list.json).toEqual([r.json]);
    const p = (await http("GET", port.uri)).json;
    expect(p).toMatchObject({ hostId: h.id, interfaceName: "tap0", host: h.uri, hostInterfacePort: uri });
  });

  it("POST checks in order: host 404, host in no zone 409, port 404, port bound 409, interface used 409, no interface 400", async () => {
    const loose = await newHost();
    const h = await zonedHost();
    const other = await zonedHost();
    const port = await newPort();
    const missingPort = randomUUID();
    // 1. A missing host, whatever the body.
    const noHost = await http("POST", `/hosts/${randomUUID()}/ports`, { portId: "not-a-uuid" });
    expectError(noHost, 404);
    // 2. A host in no tunnel zone, even for a missing port and no interface name.
    expectError(await bind(loose, missingPort), 409);
    expectError(await bind(loose, port.id, "eth0"), 409);
    // 3. A missing port, even with no interface name.
    const noPort = await bind(h, missingPort);
    expectError(noPort, 404);
    expect(noPort.json.message).toContain(missingPort);
    // 4. A port bound to another host, even with no interface name.
    expect((await bind(other, port.id, "eth0")).status).toBe(201);
    expectError(await bind(h, port.id), 409);
    expectError(await bind(h, port.id, "eth9"), 409);
    expectError(await bind(other, port.id, "eth1"), 409);
    // 5. The interface already used by another port of this host.
    const second = await newPort();
    expectError(await bind(other, second.id, "eth0"), 409);
    // 6. No interface name (not MidoNet: it stores none).
    const noName = await bind(h, second.id);
    expectError(noName, 400);
    expect(violations(noName)).toEqual(["interfaceName"]);
    // The same interface name on another host is fine.
    expect((await bind(h, second.id, "eth0")).status).toBe(201);
  });

  it("bad values: 400 naming the field", async () => {
    const h = await zonedHost();
    for (const [body, property] of [
      [{ interfaceName: "eth0" }, "portId"],
      [{ portId: "not-a-uuid", interfaceName: "eth0" }, "portId"],
      [{ portId: randomUUID(), interfaceName: "x".repeat(256) }, "interfaceName"],
      [{ portId: randomUUID(), interfaceName: "" }, "interfaceName"],
    ] as const) {
      const r = await http("POST", `/hosts/${h.id}/ports`, body);
      expectError(r, 400);
      expect(violations(r), JSON.stringify(body)).toEqual([property]);
    }
  });

  it("DELETE clears the port's host and interface; then 404; through another host 404 and nothing changes; no PUT (405)", async () => {
    const h = await zonedHost();
    const other = await zonedHost();
    const port = await newPort();
    const b = (await bind(h, port.id, "eth3")).json;
    const put = await http("PUT", b.uri, { portId: port.id, interfaceName: "eth4" });
    expectError(put, 405);
    expect(put.headers.get("allow")).toBeTruthy();
    expectError(await http("DELETE", `/hosts/${other.id}/ports/${port.id}`), 404);
    expect((await http("GET", port.uri)).json).toMatchObject({ hostId: h.id, interfaceName: "eth3" });
    // Conditional: a stale tag is a 412 and changes nothing; the binding's own tag deletes it.
    expectError(await http("DELETE", b.uri, undefined, { "if-match": '"stale"' }), 412);
    const etag = (await http("GET", b.uri)).headers.get("etag")!;
    expect(etag).toBeTruthy();
    expect((await http("DELETE", b.uri, undefined, { "if-match": etag })).status).toBe(204);
    const p = (await http("GET", port.uri)).json;
    expect(p.hostId).toBeNull();
    expect(p.interfaceName).toBeNull();
    expect(p.host).toBeNull();
    expect(p.hostInterfacePort).toBeNull();
    expectError(await http("GET", b.uri), 404);
    expectError(await http("DELETE", b.uri), 404);
    expect((await http("GET", h.ports)).json).toEqual([]);
    // Free again: the port binds anew, and so does the interface.
    expect((await bind(other, port.id, "eth3")).status).toBe(201);
  });

  it("a host with a bound port cannot be deleted (409); unbound, it can", async () => {
    const h = await zonedHost();
    const port = await newPort();
    const b = (await bind(h, port.id, "eth0")).json;
    const r = await http("DELETE", h.uri);
    expectError(r, 409);
    expect(r.json.message).toContain(port.id);
    expect((await http("GET", h.uri)).status).toBe(200);
    expect((await http("DELETE", b.uri)).status).toBe(204);
    expect((await http("DELETE", h.uri)).status).toBe(204);
  });

  it("many hosts with bound ports deleted at once (more than a service's database connections): every one a 409", async () => {
    const bound: { uri: string }[] = [];
    for (let i = 0; i < 14; i++) {
      const h = await zonedHost();
      expect((await bind(h, (await newPort()).id, "eth0")).status).toBe(201);
      bound.push(h);
    }
    const all = await Promise.all(bound.map((h) => http("DELETE", h.uri)));
    expect(all.map((r) => r.status)).toEqual(bound.map(() => 409));
  });

  it("deleting the port removes its binding: the host no longer lists it, and can be deleted", async () => {
    const h = await zonedHost();
    const port = await newPort();
    const b = (await bind(h, port.id, "eth0")).json;
    expect((await http("GET", h.ports)).json).toHaveLength(1);
    expect((await http("DELETE", port.uri)).status).toBe(204);
    expect((await http("GET", h.ports)).json).toEqual([]);
    expectError(await http("GET", b.uri), 404);
    // Announced as the binding's own deletion, beside the port's.
    const path = `/hosts/${h.id}/ports/${port.id}`;
    await waitFor("the binding's deletion announced", async () => fx.events.some((e) => e.data["path"] === path && e.subject.endsWith("routing.HostInterfacePort.deleted")), 10_000);
    expect((await http("DELETE", h.uri)).status).toBe(204);
  });

  it("one port bound twice at once, to two hosts: one 201, the other 409; the port shows the winner", async () => {
    for (let i = 0; i < 3; i++) {
      const [a, b] = [await zonedHost(), await zonedHost()];
      const port = await newPort();
      const [ra, rb] = await Promise.all([bind(a, port.id, "eth0"), bind(b, port.id, "eth0")]);
      expect([ra.status, rb.status].sort()).toEqual([201, 409]);
      const winner = ra.status === 201 ? a : b;
      expect((await http("GET", port.uri)).json.hostId).toBe(winner.id);
    }
  });

  it("one interface of a host taken by two ports at once: one 201, the other 409", async () => {
    const h = await zonedHost();
    const [p, q] = [await newPort(), await newPort()];
    const all = await Promise.all([bind(h, p.id, "tap7"), bind(h, q.id, "tap7")]);
    expect(all.map((r) => r.status).sort()).toEqual([201, 409]);
    expect((await http("GET", h.ports)).json).toHaveLength(1);
  });

  it("a binding racing its host's delete: no port stays bound to a host that is gone", async () => {
    for (let i = 0; i < 5; i++) {
      const h = await zonedHost();
      const port = await newPort();
      const [bound, deleted] = await Promise.all([bind(h, port.id, "eth0"), http("DELETE", h.uri)]);
      expect([201, 404]).toContain(bound.status);
      expect([204, 409]).toContain(deleted.status);
      if (deleted.status === 204) {
        await waitFor("the port unbound", async () => (await http("GET", port.uri)).json.hostId === null, 15_000);
      } else {
        expect(bound.status).toBe(201);
        expect((await http("GET", port.uri)).json.hostId).toBe(h.id);
      }
    }
  });

  it("a host's delete while the routing service is down: 503 naming routing, the host and its bindings kept; once routing is back, 409 while bound", async () => {
    const h = await zonedHost();
    const [p, q] = [await newPort(), await newPort()];
    await bind(h, p.id, "eth0");
    await bind(h, q.id, "eth1");
    await fx.stack.stopService("routing");
    try {
      const r = await http("DELETE", h.uri);
      expectError(r, 503);
      expect(r.json.message).toContain("routing");
      expect((await http("GET", h.uri)).status).toBe(200);
    } finally {
      await fx.stack.startServices("routing");
    }
    await waitFor("the routing service back", async () => (await http("GET", p.uri)).status === 200, 20_000);
    expect((await http("GET", p.uri)).json.hostId).toBe(h.id);
    expect((await http("GET", q.uri)).json.interfaceName).toBe("eth1");
    // The gateway reaching routing again does not mean the tunnel service does: its own channel
    // reconnects within its backoff (1 s at most); until then the delete is still a 503.
    let deleted = await http("DELETE", h.uri);
    if (deleted.status === 503) {
      await waitFor(
        "the tunnel service reaching routing",
        async () => {
          deleted = await http("DELETE", h.uri);
          return deleted.status !== 503;
        },
        10_000,
      );
    }
    expectError(deleted, 409);
  });

  it("the tunnel service down: a binding's POST and the host's list answer 503 naming it, and work again when it is back", async () => {
    const h = await zonedHost();
    const port = await newPort();
    await fx.stack.stopService("tunnel");
    try {
      const r = await bind(h, port.id, "eth0");
      expectError(r, 503);
      expect(r.json.message).toContain("tunnel");
      expect((await http("GET", port.uri)).json.hostId).toBeNull();
    } finally {
      await fx.stack.startServices("tunnel");
    }
    await waitFor("the tunnel service back", async () => (await bind(h, port.id, "eth0")).status === 201, 20_000);
    expect((await http("GET", h.ports)).json).toHaveLength(1);
  });
});

describe("administrators only", () => {
  it("a tenant's any method on hosts, zone hosts and bindings: 403", async () => {
    const name = `ta-hosts-${fx.stack.id}`;
    await http("POST", "/users", { name, password: "tenant-password-1", tenantId: "T", roles: ["tenant_admin"] });
    const token = await fx.stack.login(fx.gw, name, "tenant-password-1");
    const as = { "x-auth-token": token };
    const zone = await newZone();
    const h = await newHost();
    await join(zone, h);
    const port = randomUUID();
    for (const [method, path, body] of [
      ["GET", "/hosts"],
      ["POST", "/hosts", { name: "mine" }],
      ["GET", `/hosts/${h.id}`],
      ["PUT", `/hosts/${h.id}`, {}],
      ["DELETE", `/hosts/${h.id}`],
      ["GET", `/tunnel_zones/${zone.id}/hosts`],
      ["POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: h.id, ipAddress: "10.0.0.1" }],
      ["GET", `/tunnel_zones/${zone.id}/hosts/${h.id}`],
      ["DELETE", `/tunnel_zones/${zone.id}/hosts/${h.id}`],
      ["GET", `/hosts/${h.id}/ports`],
      ["POST", `/hosts/${h.id}/ports`, { portId: port, interfaceName: "eth0" }],
      ["GET", `/hosts/${h.id}/ports/${port}`],
      ["DELETE", `/hosts/${h.id}/ports/${port}`],
    ] as const) {
      expectError(await http(method, path, body, as), 403);
    }
    // Nothing changed.
    expect((await http("GET", `/tunnel_zones/${zone.id}/hosts`)).json).toHaveLength(1);
    expect((await http("GET", h.uri)).status).toBe(200);
  });
});

describe("a service lost", () => {
  it("the tunnel service: /hosts answers 503 naming it while the rest of the API works, and serves again once it is back", async () => {
    await expectServiceLossAndReturn(fx, "tunnel", "/hosts");
  });

  it("the routing service: a host's bindings answer 503 naming it while the rest of the API works, and serve again once it is back", async () => {
    const h = await zonedHost();
    await expectServiceLossAndReturn(fx, "routing", `/hosts/${h.id}/ports`);
  });
});
