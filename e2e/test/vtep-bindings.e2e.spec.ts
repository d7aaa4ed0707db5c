// VTEP bindings end to end (vtep-bindings.md): the tunnel service behind the gateway, with the
// bridge service it asks about bridges, real Postgres, NATS and Redis, and Debian's ovsdb-server
// with the hardware_vtep schema standing in for the device.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, httpClient, openFeed, useStack, waitFor } from "../harness/harness.ts";
import { OvsdbServer } from "../harness/ovsdb-server.ts";

const BINDING = "application/vnd.org.service.VTEPBinding-v2+json";
const BINDINGS = "application/vnd.org.service.collection.VTEPBinding-v2+json";
const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
let n = 0;
const unique = (base: string) => `${base}-${++n}`;

describe("VTEP bindings", () => {
  let device: OvsdbServer;
  let vtep: { id: string; uri: string; bindings: string };
  let bridge: { id: string; uri: string };

  beforeAll(async () => {
    device = await OvsdbServer.create();
    device.ctl("add-ps", "sw-b");
    device.ctl("set", "Physical_Switch", "sw-b", "management_ips=127.0.0.1", "tunnel_ips=10.8.0.1");
    device.ctl("add-port", "sw-b", "eth0");
    device.ctl("add-port", "sw-b", "eth 1/2");
    const zone = (await http("POST", "/tunnel_zones", { name: unique("vz"), type: "vtep" })).json;
    vtep = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: zone.id })).json;
    bridge = (await http("POST", "/bridges", { name: "bound", tenantId: "A" })).json;
    await waitFor("the device's ports", async () => (await http("GET", `${vtep.uri}/ports`)).json.length === 2, 15_000);
  });

  afterAll(async () => {
    await device.destroy();
  });

  it("POST binds (201, Location = uri, a body vtepId and unknown fields ignored); GET reads it and lists it; DELETE is 204 then 404", async () => {
    const r = await http("POST", vtep.bindings, { portName: "eth0", vlanId: 10, networkId: bridge.id, vtepId: "00000000-0000-0000-0000-000000000001", mgmtIp: "127.0.0.1" }, { "content-type": BINDING });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toEqual({ portName: "eth0", vlanId: 10, networkId: bridge.id, vtepId: vtep.id, uri: `${vtep.uri}/bindings/eth0/10` });
    expect(r.headers.get("location")).toBe(r.json.uri);
    const got = await http("GET", r.json.uri, undefined, { accept: BINDING });
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe(BINDING);
    expect(got.json).toEqual(r.json);
    const list = await http("GET", vtep.bindings, undefined, { accept: BINDINGS });
    expect(list.headers.get("content-type")).toBe(BINDINGS);
    expect(list.json).toEqual([r.json]);
    expect((await http("DELETE", r.json.uri)).status).toBe(204);
    expectError(await http("DELETE", r.json.uri), 404);
    expectError(await http("GET", r.json.uri), 404);
    expect((await http("GET", vtep.bindings)).json).toEqual([]);
  });

  it("a device's port: listed and read by name with its uri (the name URL-encoded) and its vtep, as MidoNet's VtepPort; a name the device lacks is a 404", async () => {
    const PORT = "application/vnd.org.service.VTEPPort-v1+json";
    const list = await http("GET", `${vtep.uri}/ports`, undefined, { accept: "application/vnd.org.service.collection.VTEPPort-v1+json" });
    expect(list.status).toBe(200);
    const want = [
      { name: "eth 1/2", description: "", uri: `${vtep.uri}/ports/eth%201%2F2`, vtep: vtep.uri },
      { name: "eth0", description: "", uri: `${vtep.uri}/ports/eth0`, vtep: vtep.uri },
    ];
    expect(list.json).toEqual(want);
    for (const port of want) {
      const got = await http("GET", port.uri, undefined, { accept: PORT });
      expect(got.status, got.text).toBe(200);
      expect(got.headers.get("content-type")).toBe(PORT);
      expect(got.json).toEqual(port);
    }
    const missing = await http("GET", `${vtep.uri}/ports/eth9`);
    expectError(missing, 404);
    expect(missing.json.message).toContain("eth9");
    expectError(await http("GET", "/vteps/7d1a3a2e-0000-4000-8000-000000000000/ports/eth0"), 404);
    // A port the device drops is a 404 once the session has stored that.
    device.ctl("add-port", "sw-b", "eth7");
    await waitFor("the new port", async () => (await http("GET", `${vtep.uri}/ports/eth7`)).status === 200, 5_000);
    device.ctl("del-port", "sw-b", "eth7");
    await waitFor("the port gone", async () => (await http("GET", `${vtep.uri}/ports/eth7`)).status === 404, 5_000);
    // Each announced as a VTEP port of its own (the change feed, and the console's list of ports, follow them).
    const announced = (event: string) => fx.events.some((e) => e.subject.endsWith(`.tunnel.VtepPort.${event}`) && e.data["path"] === `/vteps/${vtep.id}/ports/eth7`);
    await waitFor("eth7 announced created and deleted", async () => announced("created") && announced("deleted"), 5_000);
  });

  it("a port name is URL-encoded in the uri, and that uri reads the binding", async () => {
    const r = await http("POST", vtep.bindings, { portName: "eth 1/2", vlanId: 0, networkId: bridge.id });
    expect(r.status, r.text).toBe(201);
    expect(r.json.uri).toBe(`${vtep.uri}/bindings/eth%201%2F2/0`);
    expect((await http("GET", r.json.uri)).json.portName).toBe("eth 1/2");
    expect((await http("DELETE", r.json.uri)).status).toBe(204);
  });

  it("a POST is judged in order: the VTEP (404), the body (400 naming the field), the bridge (404 naming it), the port (404), the pair (409)", async () => {
    const nobody = "7d1a3a2e-0000-4000-8000-000000000000";
    expectError(await http("POST", `/vteps/${nobody}/bindings`, { vlanId: -1 }), 404);
    for (const [body, property] of [
      [{ vlanId: 1, networkId: bridge.id }, "portName"],
      [{ portName: "eth0", vlanId: 1 }, "networkId"],
      [{ portName: "eth0", vlanId: -1, networkId: bridge.id }, "vlanId"],
      [{ portName: "eth0", vlanId: 4096, networkId: bridge.id }, "vlanId"],
    ] as const) {
      const r = await http("POST", vtep.bindings, body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    }
    const noBridge = await http("POST", vtep.bindings, { portName: "nope", vlanId: 1, networkId: nobody });
    expectError(noBridge, 404);
    expect(noBridge.json.message).toContain(nobody);
    expectError(await http("POST", vtep.bindings, { portName: "nope", vlanId: 1, networkId: bridge.id }), 404);
    const other = (await http("POST", "/bridges", { name: "other", tenantId: "B" })).json;
    const first = await http("POST", vtep.bindings, { portName: "eth0", vlanId: 7, networkId: bridge.id });
    expect(first.status).toBe(201);
    expectError(await http("POST", vtep.bindings, { portName: "eth0", vlanId: 7, networkId: bridge.id }), 409);
    expectError(await http("POST", vtep.bindings, { portName: "eth0", vlanId: 7, networkId: other.id }), 409);
    expect((await http("GET", vtep.bindings)).json).toEqual([first.json]);
    expect((await http("POST", vtep.bindings, { portName: "eth0", vlanId: 8, networkId: other.id })).status).toBe(201);
    expect((await http("DELETE", `${vtep.uri}/bindings/eth0/8`)).status).toBe(204);
    expect((await http("DELETE", first.json.uri)).status).toBe(204);
  });

  it("PUT is a 405 with Allow; a VLAN that is none is a 404", async () => {
    const r = await http("PUT", `${vtep.uri}/bindings/eth0/3`, { portName: "eth0", vlanId: 3, networkId: bridge.id });
    expectError(r, 405);
    expect(r.headers.get("allow")).toContain("GET");
    expect(r.headers.get("allow")).not.toContain("PUT");
    for (const vlan of ["x", "4096", "-1", "1.5"]) expectError(await http("GET", `${vtep.uri}/bindings/eth0/${vlan}`), 404);
  });

  it("a VTEP with bindings cannot be deleted (409, it and its bindings stay); unbound, it can", async () => {
    const zone = (await http("POST", "/tunnel_zones", { name: unique("vz"), type: "vtep" })).json;
    const second = await OvsdbServer.create();
    try {
      second.ctl("add-ps", "sw-c");
      second.ctl("set", "Physical_Switch", "sw-c", "management_ips=127.0.0.1");
      second.ctl("add-port", "sw-c", "p1");
      const v = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: second.port, tunnelZoneId: zone.id })).json;
      await waitFor("its port", async () => (await http("GET", `${v.uri}/ports`)).json.length === 1, 15_000);
      const b = await http("POST", v.bindings, { portName: "p1", vlanId: 1, networkId: bridge.id });
      expect(b.status).toBe(201);
      expectError(await http("DELETE", v.uri), 409);
      expect((await http("GET", v.uri)).status).toBe(200);
      expect((await http("GET", v.bindings)).json).toEqual([b.json]);
      expect((await http("DELETE", b.json.uri)).status).toBe(204);
      expect((await http("DELETE", v.uri)).status).toBe(204);
      expectError(await http("GET", v.uri), 404);
    } finally {
      await second.destroy();
    }
  });

  it("a device that is not connected is a 503 with Retry-After, and nothing is stored", async () => {
    const zone = (await http("POST", "/tunnel_zones", { name: unique("vz"), type: "vtep" })).json;
    const gone = await OvsdbServer.create();
    const port = gone.port;
    await gone.destroy();
    const v = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: port, tunnelZoneId: zone.id })).json;
    const r = await http("POST", v.bindings, { portName: "p1", vlanId: 1, networkId: bridge.id });
    expectError(r, 503);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await http("GET", v.bindings)).json).toEqual([]);
    expect((await http("DELETE", v.uri)).status).toBe(204);
  });

  it("bindings are admin-only: a tenant admin's or user's request is a 403 and binds nothing", async () => {
    const tokens: string[] = [];
    for (const role of ["tenant_admin", "tenant_user"]) {
      const name = unique(role);
      expect((await http("POST", "/users", { name, password: "tenant-password-1", tenantId: "A", roles: [role] })).status).toBe(201);
      tokens.push(await fx.stack.login(fx.gw, name, "tenant-password-1"));
    }
    for (const token of tokens) {
      const as = httpClient(() => fx.gw, "application/json", () => token);
      expectError(await as("POST", vtep.bindings, { portName: "eth0", vlanId: 20, networkId: bridge.id }), 403);
      expectError(await as("GET", vtep.bindings), 403);
      expectError(await as("GET", `${vtep.uri}/bindings/eth0/20`), 403);
      expectError(await as("DELETE", `${vtep.uri}/bindings/eth0/20`), 403);
      expectError(await as("GET", `${vtep.uri}/ports`), 403);
      expectError(await as("GET", `${vtep.uri}/ports/eth0`), 403);
    }
    expect((await http("GET", vtep.bindings)).json).toEqual([]);
  });
});

describe("a bridge's VXLAN ports", () => {
  const devices: OvsdbServer[] = [];
  const vteps: { id: string; uri: string; bindings: string }[] = [];

  beforeAll(async () => {
    for (const name of ["sw-x", "sw-y"]) {
      const d = await OvsdbServer.create();
      d.ctl("add-ps", name);
      d.ctl("set", "Physical_Switch", name, "management_ips=127.0.0.1");
      d.ctl("add-port", name, "eth0");
      devices.push(d);
      const zone = (await http("POST", "/tunnel_zones", { name: unique("vz"), type: "vtep" })).json;
      const v = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: d.port, tunnelZoneId: zone.id })).json;
      vteps.push(v);
      await waitFor("the device's port", async () => (await http("GET", `${v.uri}/ports`)).json.length === 1, 15_000);
    }
  });

  afterAll(async () => {
    for (const d of devices) await d.destroy();
  });

  const portIdsOf = async (bridge: { uri: string }) => (await http("GET", bridge.uri)).json.vxlanPortIds as string[];

  it("one per (bridge, VTEP): made with the first binding, listed at vxlan_ports and /ports, not among the bridge's ports, gone with the last", async () => {
    const bridge = (await http("POST", "/bridges", { name: unique("vx"), tenantId: "A" })).json;
    expect(bridge.vxlanPortIds).toEqual([]);
    const [x, y] = vteps as [(typeof vteps)[0], (typeof vteps)[0]];
    const first = await http("POST", x.bindings, { portName: "eth0", vlanId: 1, networkId: bridge.id });
    expect(first.status).toBe(201);
    await waitFor("the bridge's VXLAN port", async () => (await portIdsOf(bridge)).length === 1, 5_000);
    const [px] = await portIdsOf(bridge);
    const port = (await http("GET", `/ports/${px}`)).json;
    expect(port).toMatchObject({ id: px, type: "Vxlan", vtepId: x.id, deviceId: bridge.id, uri: expect.stringMatching(new RegExp(`/ports/${px}$`)) });
    expect(port.device).toMatch(new RegExp(`/bridges/${bridge.id}$`));
    expect((await http("GET", bridge.vxLanPorts)).json.map((p: { id: string }) => p.id)).toEqual([px]);
    expect((await http("GET", bridge.ports)).json).toEqual([]);
    expect((await http("GET", "/ports")).json.map((p: { id: string }) => p.id)).toContain(px);
    // A second pair on the same VTEP: still one port.
    const second = await http("POST", x.bindings, { portName: "eth0", vlanId: 2, networkId: bridge.id });
    expect(second.status).toBe(201);
    // Another VTEP: its own port.
    const other = await http("POST", y.bindings, { portName: "eth0", vlanId: 1, networkId: bridge.id });
    expect(other.status).toBe(201);
    await waitFor("a second VXLAN port", async () => (await portIdsOf(bridge)).length === 2, 5_000);
    const py = (await portIdsOf(bridge)).find((p) => p !== px)!;
    expect((await http("GET", `/ports/${py}`)).json).toMatchObject({ type: "Vxlan", vtepId: y.id, deviceId: bridge.id });
    // The port and the bridge stay while bound.
    expectError(await http("DELETE", `/ports/${px}`), 409);
    expect((await http("GET", `/ports/${px}`)).status).toBe(200);
    expectError(await http("DELETE", bridge.uri), 409);
    expect((await http("GET", bridge.uri)).status).toBe(200);
    // One of two pairs gone: the port stays; the last: it goes, the other VTEP's stays.
    expect((await http("DELETE", first.json.uri)).status).toBe(204);
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await portIdsOf(bridge)).sort()).toEqual([px, py].sort());
    expect((await http("DELETE", second.json.uri)).status).toBe(204);
    await waitFor("the first VXLAN port gone", async () => (await http("GET", `/ports/${px}`)).status === 404, 5_000);
    await waitFor("vxlanPortIds without it", async () => JSON.stringify(await portIdsOf(bridge)) === JSON.stringify([py]), 5_000);
    expect((await http("GET", bridge.vxLanPorts)).json.map((p: { id: string }) => p.id)).toEqual([py]);
    expect((await http("DELETE", other.json.uri)).status).toBe(204);
    await waitFor("no VXLAN port left", async () => (await portIdsOf(bridge)).length === 0, 5_000);
    expect((await http("GET", bridge.vxLanPorts)).json).toEqual([]);
    expect((await http("DELETE", bridge.uri)).status).toBe(204);
  });

  it("tenancy: the bridge's tenant sees vxlanPortIds and the port; another tenant's vxlan_ports is a 404 that names no port", async () => {
    const bridge = (await http("POST", "/bridges", { name: unique("vt"), tenantId: "A" })).json;
    const b = await http("POST", vteps[0]!.bindings, { portName: "eth0", vlanId: 30, networkId: bridge.id });
    expect(b.status).toBe(201);
    await waitFor("the bridge's VXLAN port", async () => (await portIdsOf(bridge)).length === 1, 5_000);
    const [px] = await portIdsOf(bridge);
    const as: Record<string, ReturnType<typeof httpClient>> = {};
    for (const tenant of ["A", "B"]) {
      const name = unique(`ta-${tenant}`);
      expect((await http("POST", "/users", { name, password: "tenant-password-1", tenantId: tenant, roles: ["tenant_admin"] })).status).toBe(201);
      const token = await fx.stack.login(fx.gw, name, "tenant-password-1");
      as[tenant] = httpClient(() => fx.gw, "application/json", () => token);
    }
    expect((await as["A"]!("GET", bridge.uri)).json.vxlanPortIds).toEqual([px]);
    expect((await as["A"]!("GET", `/ports/${px}`)).status).toBe(200);
    expect((await as["A"]!("GET", bridge.vxLanPorts)).json.map((p: { id: string }) => p.id)).toEqual([px]);
    const hidden = await as["B"]!("GET", bridge.vxLanPorts);
    expectError(hidden, 404);
    expect(hidden.text).not.toContain(px);
    expectError(await as["B"]!("GET", `/ports/${px}`), 404);
    expect((await http("DELETE", b.json.uri)).status).toBe(204);
    await waitFor("no VXLAN port left", async () => (await portIdsOf(bridge)).length === 0, 5_000);
    expect((await http("DELETE", bridge.uri)).status).toBe(204);
  });

  it("a binding made while the routing service is down gets its VXLAN port once it is back (the queued pair is asked again)", async () => {
    const bridge = (await http("POST", "/bridges", { name: unique("vr"), tenantId: "A" })).json;
    await fx.stack.stopService("routing");
    try {
      const b = await http("POST", vteps[1]!.bindings, { portName: "eth0", vlanId: 40, networkId: bridge.id });
      expect(b.status).toBe(201);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await portIdsOf(bridge)).toEqual([]);
    } finally {
      await fx.stack.startServices("routing");
    }
    await waitFor("the VXLAN port, routing back", async () => (await portIdsOf(bridge)).length === 1, 20_000);
    const [px] = await portIdsOf(bridge);
    expect((await http("GET", `/ports/${px}`)).json).toMatchObject({ type: "Vxlan", vtepId: vteps[1]!.id });
    expect((await http("DELETE", `${vteps[1]!.uri}/bindings/eth0/40`)).status).toBe(204);
    await waitFor("no VXLAN port left", async () => (await portIdsOf(bridge)).length === 0, 5_000);
  });

  it("a POST of a Vxlan port is a 400 naming type", async () => {
    const bridge = (await http("POST", "/bridges", { name: unique("vp"), tenantId: "A" })).json;
    const r = await http("POST", bridge.ports, { type: "Vxlan" });
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual(["type"]);
  });
});

describe("the device holds the bindings (vtep-ctl against the real ovsdb-server)", () => {
  let device: OvsdbServer;
  let vtep: { id: string; uri: string; bindings: string };

  const setUpSwitch = (d: OvsdbServer) => {
    d.ctl("add-ps", "sw-d");
    d.ctl("set", "Physical_Switch", "sw-d", "management_ips=127.0.0.1");
    d.ctl("add-port", "sw-d", "eth0");
    d.ctl("add-port", "sw-d", "eth1");
  };
  /** Logical switches by name: their _uuid and tunnel_key. */
  const switches = () => {
    const out = device.ctl("--columns=_uuid,name,tunnel_key", "--format=json", "list", "Logical_Switch");
    const t = JSON.parse(out) as { headings: string[]; data: unknown[][] };
    const m = new Map<string, { uuid: string; key: number | undefined }>();
    for (const row of t.data) {
      const key = row[2];
      m.set(String(row[1]), { uuid: (row[0] as [string, string])[1], key: typeof key === "number" ? key : undefined });
    }
    return m;
  };
  /** A port's VLAN bindings as vtep-ctl prints them: "0010 mn-…" lines. */
  const bindingsOf = (port: string) => device.ctl("list-bindings", "sw-d", port).trim().split("\n").filter(Boolean).map((l) => l.trim().replace(/^0*(\d)/, "$1"));

  beforeAll(async () => {
    device = await OvsdbServer.create();
    setUpSwitch(device);
    const zone = (await http("POST", "/tunnel_zones", { name: unique("vz"), type: "vtep" })).json;
    vtep = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: zone.id })).json;
    await waitFor("the device's ports", async () => (await http("GET", `${vtep.uri}/ports`)).json.length === 2, 15_000);
  });

  afterAll(async () => {
    await device.destroy();
  });

  it("a binding puts mn-<bridge> with the VNI as tunnel_key and the VLAN binding; a second reuses the switch; another bridge has its own key; unbinding removes the VLAN, then the switch with the rows that refer to it", async () => {
    const a = (await http("POST", "/bridges", { name: unique("da"), tenantId: "A" })).json;
    const b = (await http("POST", "/bridges", { name: unique("db"), tenantId: "A" })).json;
    const lsA = `mn-${a.id}`;
    const lsB = `mn-${b.id}`;
    const first = await http("POST", vtep.bindings, { portName: "eth0", vlanId: 10, networkId: a.id });
    expect(first.status).toBe(201);
    await waitFor("the logical switch and VLAN binding", async () => switches().has(lsA) && bindingsOf("eth0").includes(`10 ${lsA}`), 10_000);
    const sA = switches().get(lsA)!;
    expect(sA.key).toBeGreaterThanOrEqual(10_000);
    expect(sA.key).toBeLessThan(2 ** 24);
    const second = await http("POST", vtep.bindings, { portName: "eth1", vlanId: 11, networkId: a.id });
    expect(second.status).toBe(201);
    await waitFor("the second VLAN binding", async () => bindingsOf("eth1").includes(`11 ${lsA}`), 10_000);
    expect(switches().get(lsA)).toEqual(sA);
    const other = await http("POST", vtep.bindings, { portName: "eth0", vlanId: 20, networkId: b.id });
    expect(other.status).toBe(201);
    await waitFor("the other bridge's switch", async () => switches().has(lsB) && bindingsOf("eth0").includes(`20 ${lsB}`), 10_000);
    expect(switches().get(lsB)!.key).not.toBe(sA.key);
    // Someone else's switch and binding on the same port stay.
    device.ctl("add-ls", "theirs");
    device.ctl("bind-ls", "sw-d", "eth0", "99", "theirs");
    // One of a's two pairs goes: its VLAN leaves, the switch stays.
    expect((await http("DELETE", second.json.uri)).status).toBe(204);
    await waitFor("VLAN 11 unbound", async () => bindingsOf("eth1").length === 0, 10_000);
    expect(switches().get(lsA)).toEqual(sA);
    // A MAC the device learned in a's switch does not keep the switch from going with a's last pair.
    device.ctl("add-ucast-local", lsA, "00:11:22:33:44:55", "10.0.0.9");
    expect((await http("DELETE", first.json.uri)).status).toBe(204);
    await waitFor("a's switch gone", async () => !switches().has(lsA), 10_000);
    expect(device.ctl("list", "Ucast_Macs_Local").trim()).toBe("");
    expect(bindingsOf("eth0").sort()).toEqual([`20 ${lsB}`, "99 theirs"].sort());
    expect(switches().has("theirs")).toBe(true);
    expect((await http("DELETE", other.json.uri)).status).toBe(204);
    await waitFor("b's switch gone", async () => !switches().has(lsB), 10_000);
    expect(bindingsOf("eth0")).toEqual(["99 theirs"]);
  });

  it("a MAC the device learns shows within 2 s in the bridge's MAC table on its VXLAN port, its IP in the ARP table; forgotten, both go, each within 2 s (the device's updates are followed, not polled)", async () => {
    const a = (await http("POST", "/bridges", { name: unique("dl"), tenantId: "A" })).json;
    const ls = `mn-${a.id}`;
    const b = await http("POST", vtep.bindings, { portName: "eth0", vlanId: 50, networkId: a.id });
    expect(b.status).toBe(201);
    await waitFor("the switch", async () => switches().has(ls), 10_000);
    await waitFor("the VXLAN port", async () => (await http("GET", a.uri)).json.vxlanPortIds.length === 1, 10_000);
    const [portId] = (await http("GET", a.uri)).json.vxlanPortIds;
    const macTable = async () => (await http("GET", `${a.uri}/mac_table`)).json as { macAddr: string; portId: string; vlanId: number }[];
    const arpTable = async () => (await http("GET", `${a.uri}/arp_table`)).json as { ip: string; mac: string }[];
    // Past a periodic reconcile's start, so a learned MAC cannot ride on one by luck, five times.
    const took: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const mac = `00:aa:bb:cc:dd:0${i}`;
      device.ctl("add-ucast-local", ls, mac.toUpperCase(), "10.0.0.9");
      const at = Date.now();
      await waitFor("the learned MAC", async () => (await macTable()).some((e) => e.macAddr === mac), 2_000);
      took.push(Date.now() - at);
      expect(await macTable()).toContainEqual(expect.objectContaining({ macAddr: mac, portId, vlanId: 0 }));
      if (i > 1) device.ctl("del-ucast-local", ls, mac.toUpperCase());
      await new Promise((r) => setTimeout(r, 700));
    }
    console.log(`learned MAC -> bridge MAC table (ms, polled every 100 ms): ${took.join(", ")}`);
    await waitFor("only the first left", async () => (await macTable()).length === 1, 2_000);
    // The device's only learned MAC (the earlier test's went with its switch).
    const row = device.ctl("--bare", "--columns=_uuid", "list", "Ucast_Macs_Local").trim();
    device.ctl("set", "Ucast_Macs_Local", row, "ipaddr=10.1.2.3");
    let at = Date.now();
    await waitFor("its ARP entry", async () => (await arpTable()).some((e) => e.ip === "10.1.2.3" && e.mac === "00:aa:bb:cc:dd:01"), 2_000);
    expect(Date.now() - at).toBeLessThan(2_000);
    device.ctl("del-ucast-local", ls, "00:AA:BB:CC:DD:01");
    at = Date.now();
    await waitFor("both gone", async () => (await macTable()).length === 0 && (await arpTable()).length === 0, 2_000);
    expect(Date.now() - at).toBeLessThan(2_000);
    // A pair the device taught that the operator then writes is the operator's: 201, and it
    // stays when the device forgets the MAC.
    device.ctl("add-ucast-local", ls, "00:AA:BB:CC:DD:07", "10.0.0.9");
    const taught = device.ctl("--bare", "--columns=_uuid", "find", "Ucast_Macs_Local", `MAC="00:AA:BB:CC:DD:07"`).trim();
    device.ctl("set", "Ucast_Macs_Local", taught, "ipaddr=10.1.2.7");
    await waitFor("the taught ARP entry", async () => (await arpTable()).some((e) => e.ip === "10.1.2.7"), 5_000);
    const taken = await http("POST", `${a.uri}/arp_table`, { ip: "10.1.2.7", mac: "00:aa:bb:cc:dd:07" });
    expect(taken.status, JSON.stringify(taken.json)).toBe(201);
    expect((await http("POST", `${a.uri}/arp_table`, { ip: "10.1.2.7", mac: "00:aa:bb:cc:dd:07" })).status).toBe(409);
    device.ctl("del-ucast-local", ls, "00:AA:BB:CC:DD:07");
    await waitFor("the MAC gone", async () => (await macTable()).length === 0, 5_000);
    expect((await arpTable()).map(({ ip, mac }) => ({ ip, mac }))).toEqual([{ ip: "10.1.2.7", mac: "00:aa:bb:cc:dd:07" }]);
    expect((await http("DELETE", b.json.uri)).status).toBe(204);
    await waitFor("the switch gone", async () => !switches().has(ls), 10_000);
  });

  it("a MAC of the bridge on a port bound to a host of the VTEP's tunnel zone becomes a Ucast_Macs_Remote row within 5 s (its locator the host's address, ipaddr from the ARP table), unknown-dst goes to the flooding proxy; deleted, the row goes; a device restarted empty gets them back", async () => {
    const a = (await http("POST", "/bridges", { name: unique("dm"), tenantId: "A" })).json;
    const ls = `mn-${a.id}`;
    const zoneId = (await http("GET", vtep.uri)).json.tunnelZoneId;
    const made: [string, string][] = []; // torn down in reverse
    const host = async (ip: string, weight: number) => {
      const h = (await http("POST", "/hosts", { name: unique("hm"), addresses: [ip], floodingProxyWeight: weight })).json;
      expect((await http("POST", `/tunnel_zones/${zoneId}/hosts`, { hostId: h.id, ipAddress: ip })).status).toBe(201);
      made.push(["DELETE", `/hosts/${h.id}`], ["DELETE", `/tunnel_zones/${zoneId}/hosts/${h.id}`]);
      return h;
    };
    const boundPort = async (h: { id: string }, ifName: string) => {
      const p = (await http("POST", a.ports, { type: "Bridge" })).json;
      made.push(["DELETE", `/ports/${p.id}`]);
      expect((await http("POST", `/hosts/${h.id}/ports`, { portId: p.id, interfaceName: ifName })).status).toBe(201);
      made.push(["DELETE", `/hosts/${h.id}/ports/${p.id}`]);
      return p;
    };
    /** Ucast_Macs_Remote rows of the switch: MAC -> "dst_ip ipaddr". */
    const remote = () => {
      const table = (t: string, cols: string) => (JSON.parse(device.ctl(`--columns=${cols}`, "--format=json", "list", t)) as { data: unknown[][] }).data;
      const dst = new Map(table("Physical_Locator", "_uuid,dst_ip").map((r) => [(r[0] as string[])[1], String(r[1])]));
      const sw = switches().get(ls)?.uuid;
      const out = new Map<string, string>();
      for (const r of table("Ucast_Macs_Remote", "MAC,logical_switch,locator,ipaddr")) {
        if ((r[1] as string[])[1] === sw) out.set(String(r[0]), `${dst.get((r[2] as string[])[1])} ${String(r[3])}`);
      }
      return out;
    };
    const unknownDst = () => device.ctl("list-remote-macs", ls).split("\n").map((l) => l.trim()).filter((l) => l.startsWith("unknown-dst"));
    try {
      const h1 = await host("10.20.0.5", 1);
      const h2 = await host("10.20.0.6", 9);
      const p1 = await boundPort(h1, "eth9");
      const p2 = await boundPort(h2, "eth9");
      const loose = (await http("POST", a.ports, { type: "Bridge" })).json; // bound to no host
      made.push(["DELETE", `/ports/${loose.id}`]);
      const b = await http("POST", vtep.bindings, { portName: "eth1", vlanId: 70, networkId: a.id });
      expect(b.status).toBe(201);
      made.push(["DELETE", b.json.uri]);
      await waitFor("the switch", async () => switches().has(ls), 10_000);
      await waitFor("unknown-dst toward the flooding proxy (the greatest weight)", async () => unknownDst().join() === "unknown-dst -> vxlan_over_ipv4/10.20.0.6", 5_000);
      expect(remote().size).toBe(0);
      const at = Date.now();
      for (const [mac, port] of [["02:00:00:00:00:0a", p1], ["02:00:00:00:00:0b", p2], ["02:00:00:00:00:0c", loose]] as const) {
        expect((await http("POST", `${a.uri}/mac_table`, { macAddr: mac, portId: port.id })).status).toBe(201);
      }
      expect((await http("POST", `${a.uri}/arp_table`, { ip: "10.30.0.10", mac: "02:00:00:00:00:0a" })).status).toBe(201);
      const want = new Map([
        ["02:00:00:00:00:0a", "10.20.0.5 10.30.0.10"],
        ["02:00:00:00:00:0b", "10.20.0.6 "],
      ]);
      await waitFor("both remote MACs, the loose port's left out", async () => JSON.stringify([...remote()].sort()) === JSON.stringify([...want].sort()), 5_000);
      expect(Date.now() - at).toBeLessThan(5_000);
      // One locator per host address, reused.
      expect(device.ctl("--bare", "--columns=dst_ip", "list", "Physical_Locator").trim().split(/\s+/).sort()).toEqual(["10.20.0.5", "10.20.0.6"]);
      // A MAC the device learns (on the VXLAN port) is not written back.
      device.ctl("add-ucast-local", ls, "02:00:00:00:00:0d", "10.8.0.1");
      await waitFor("the learned MAC in the bridge", async () => (await http("GET", `${a.uri}/mac_table`)).json.some((e: { macAddr: string }) => e.macAddr === "02:00:00:00:00:0d"), 5_000);
      await new Promise((r) => setTimeout(r, 3_500));
      expect([...remote().keys()].sort()).toEqual(["02:00:00:00:00:0a", "02:00:00:00:00:0b"]);
      device.ctl("del-ucast-local", ls, "02:00:00:00:00:0d");
      // An entry deleted takes its row.
      const gone = Date.now();
      expect((await http("DELETE", `${a.uri}/mac_table/02-00-00-00-00-0b_${p2.id}`)).status).toBe(204);
      await waitFor("the deleted entry's row gone", async () => !remote().has("02:00:00:00:00:0b"), 5_000);
      expect(Date.now() - gone).toBeLessThan(5_000);
      expect(remote().get("02:00:00:00:00:0a")).toBe("10.20.0.5 10.30.0.10");
      // The heavier host no longer a flooding proxy (weight 0): unknown-dst moves to the other.
      const h2now = (await http("GET", `/hosts/${h2.id}`)).json;
      expect((await http("PUT", `/hosts/${h2.id}`, { ...h2now, floodingProxyWeight: 0 })).status).toBe(200);
      await waitFor("unknown-dst toward the other host", async () => unknownDst().join() === "unknown-dst -> vxlan_over_ipv4/10.20.0.5", 5_000);
      // Routing down (the hosts' ports cannot be read): the rows stay as they are, not wiped.
      await fx.stack.stopService("routing");
      try {
        // Reconciles started by announced changes (an ARP entry of a MAC the bridge does not
        // have, made then deleted: nothing the device holds changes), each failing to read routing.
        for (const method of ["POST", "DELETE"] as const) {
          const r = method === "POST" ? await http("POST", `${a.uri}/arp_table`, { ip: "10.30.0.99", mac: "02:00:00:00:09:99" }) : await http("DELETE", `${a.uri}/arp_table/10.30.0.99_02-00-00-00-09-99`);
          expect(r.status).toBe(method === "POST" ? 201 : 204);
          await new Promise((r) => setTimeout(r, 1_500));
          expect(remote().get("02:00:00:00:00:0a")).toBe("10.20.0.5 10.30.0.10");
          expect(unknownDst()).toHaveLength(1);
        }
      } finally {
        await fx.stack.startServices("routing");
      }
      // A device restarted empty gets them back.
      await device.stop();
      rmSync(join(device.dir, "vtep.db"), { force: true });
      execFileSync("ovsdb-tool", ["create", join(device.dir, "vtep.db"), "/usr/share/openvswitch/vtep.ovsschema"]);
      await device.start();
      setUpSwitch(device);
      await waitFor("the remote MAC and unknown-dst back", async () => switches().has(ls) && remote().get("02:00:00:00:00:0a") === "10.20.0.5 10.30.0.10" && unknownDst().length === 1, 10_000);
      // The tests after this one bind the ports again: the session has stored them anew.
      await waitFor("the device's ports stored again", async () => (await http("GET", `${vtep.uri}/ports`)).json.length === 2, 15_000);
    } finally {
      for (const [method, path] of made.reverse()) await http(method, path);
    }
    await waitFor("the switch gone", async () => !switches().has(ls), 10_000);
  }, 90_000);

  it("a device restarted empty is rewritten within 10 s: the switch with its original tunnel_key and every VLAN binding", async () => {
    const a = (await http("POST", "/bridges", { name: unique("dr"), tenantId: "A" })).json;
    const ls = `mn-${a.id}`;
    for (const [port, vlanId] of [["eth0", 5], ["eth1", 6]] as const) {
      expect((await http("POST", vtep.bindings, { portName: port, vlanId, networkId: a.id })).status).toBe(201);
    }
    await waitFor("both VLAN bindings", async () => bindingsOf("eth0").includes(`5 ${ls}`) && bindingsOf("eth1").includes(`6 ${ls}`), 10_000);
    const key = switches().get(ls)!.key;
    await device.stop();
    rmSync(join(device.dir, "vtep.db"), { force: true });
    execFileSync("ovsdb-tool", ["create", join(device.dir, "vtep.db"), "/usr/share/openvswitch/vtep.ovsschema"]);
    await device.start();
    const back = Date.now();
    expect(switches().has(ls)).toBe(false);
    setUpSwitch(device);
    await waitFor("everything back", async () => switches().get(ls)?.key === key && bindingsOf("eth0").includes(`5 ${ls}`) && bindingsOf("eth1").includes(`6 ${ls}`), 10_000);
    const took = Date.now() - back;
    console.log(`device restarted empty -> rewritten (from its return, its switch set up again meanwhile): ${took} ms`);
    expect(took).toBeLessThan(10_000);
    for (const u of ["eth0/5", "eth1/6"]) expect((await http("DELETE", `${vtep.uri}/bindings/${u}`)).status).toBe(204);
    await waitFor("the switch gone", async () => !switches().has(ls), 10_000);
    // The tests after this one bind again, which needs the VTEP connected as its session last
    // stored it: the session stores its state at most once a second, so the device's rows can be
    // back before the VTEP reads connected (a bind then is the 503 a client retries after).
    await waitFor("the VTEP connected", async () => (await http("GET", vtep.uri)).json.connectionState === "connected", 15_000);
  });

  it("unbinding removes what the device taught the bridge (its MAC entries on the VXLAN port and their ARP entries), the device connected or stopped; the bridge's own entries stay, and the device keeps no row for it", async () => {
    const zoneId = (await http("GET", vtep.uri)).json.tunnelZoneId;
    const made: [string, string][] = []; // torn down in reverse
    type Entry = { macAddr: string; portId: string; vlanId: number };
    type Arp = { ip: string; mac: string };
    const macTable = async (b: { uri: string }) => ((await http("GET", `${b.uri}/mac_table`)).json as Entry[]).map(({ macAddr, portId, vlanId }) => ({ macAddr, portId, vlanId }));
    const arpTable = async (b: { uri: string }) => ((await http("GET", `${b.uri}/arp_table`)).json as Arp[]).map(({ ip, mac }) => ({ ip, mac }));
    const rowsOf = (table: string, cols: string) => (JSON.parse(device.ctl(`--columns=${cols}`, "--format=json", "list", table)) as { data: unknown[][] }).data;
    /** Rows of a table whose logical_switch is the switch with this _uuid. */
    const inSwitch = (table: string, uuid: string) => rowsOf(table, "logical_switch").filter((r) => (r[0] as string[])[1] === uuid).length;
    /** Binds the bridge on eth0 with this VLAN; its switch's _uuid and its VXLAN port once both exist. */
    const bind = async (b: { id: string; uri: string }, vlanId: number) => {
      const r = await http("POST", vtep.bindings, { portName: "eth0", vlanId, networkId: b.id });
      expect(r.status, r.text).toBe(201);
      made.push(["DELETE", r.json.uri]);
      await waitFor("the switch", async () => switches().has(`mn-${b.id}`), 10_000);
      await waitFor("the VXLAN port", async () => (await http("GET", b.uri)).json.vxlanPortIds.length === 1, 10_000);
      return { uri: r.json.uri as string, sw: switches().get(`mn-${b.id}`)!.uuid, port: (await http("GET", b.uri)).json.vxlanPortIds[0] as string };
    };
    /** The device learns a MAC with an IP in the bridge's switch; both reach the bridge. */
    const learn = async (b: { id: string; uri: string }, mac: string, ip: string, port: string) => {
      device.ctl("add-ucast-local", `mn-${b.id}`, mac, "10.0.0.9");
      const row = device.ctl("--bare", "--columns=_uuid", "find", "Ucast_Macs_Local", `MAC="${mac}"`).trim();
      device.ctl("set", "Ucast_Macs_Local", row, `ipaddr=${ip}`);
      await waitFor("the learned MAC and its ARP entry in the bridge", async () => (await macTable(b)).some((e) => e.macAddr === mac && e.portId === port) && (await arpTable(b)).some((a) => a.mac === mac && a.ip === ip), 5_000);
    };
    try {
      // A zone member with a port of the bridge bound to it: the device gets a remote MAC and unknown-dst.
      const h = (await http("POST", "/hosts", { name: unique("hu"), addresses: ["10.20.0.7"], floodingProxyWeight: 1 })).json;
      made.push(["DELETE", `/hosts/${h.id}`]);
      expect((await http("POST", `/tunnel_zones/${zoneId}/hosts`, { hostId: h.id, ipAddress: "10.20.0.7" })).status).toBe(201);
      made.push(["DELETE", `/tunnel_zones/${zoneId}/hosts/${h.id}`]);
      const a = (await http("POST", "/bridges", { name: unique("du"), tenantId: "A" })).json;
      made.push(["DELETE", a.uri]);
      const p = (await http("POST", a.ports, { type: "Bridge" })).json;
      made.push(["DELETE", `/ports/${p.id}`]);
      expect((await http("POST", `/hosts/${h.id}/ports`, { portId: p.id, interfaceName: "eth9" })).status).toBe(201);
      made.push(["DELETE", `/hosts/${h.id}/ports/${p.id}`]);
      expect((await http("POST", `${a.uri}/mac_table`, { macAddr: "02:00:00:00:01:0a", portId: p.id })).status).toBe(201);
      expect((await http("POST", `${a.uri}/arp_table`, { ip: "10.30.0.11", mac: "02:00:00:00:01:0a" })).status).toBe(201);
      const own = { mac: [{ macAddr: "02:00:00:00:01:0a", portId: p.id, vlanId: 0 }], arp: [{ ip: "10.30.0.11", mac: "02:00:00:00:01:0a" }] };

      // Connected: the device learned a MAC; unbinding takes its entries and every row of the switch.
      const x = await bind(a, 61);
      await waitFor("the remote MAC and unknown-dst", async () => inSwitch("Ucast_Macs_Remote", x.sw) === 1 && inSwitch("Mcast_Macs_Remote", x.sw) === 1, 5_000);
      await learn(a, "00:aa:bb:cc:ee:01", "10.0.0.21", x.port);
      expect((await http("DELETE", x.uri)).status).toBe(204);
      await waitFor("no VXLAN port", async () => (await http("GET", a.uri)).json.vxlanPortIds.length === 0, 5_000);
      await waitFor("the learned entries gone", async () => !(await macTable(a)).some((e) => e.portId === x.port) && !(await arpTable(a)).some((e) => e.mac === "00:aa:bb:cc:ee:01"), 5_000);
      await waitFor("the switch gone", async () => !switches().has(`mn-${a.id}`), 10_000);
      for (const t of ["Ucast_Macs_Remote", "Mcast_Macs_Remote", "Ucast_Macs_Local"]) expect(inSwitch(t, x.sw), t).toBe(0);
      expect(device.ctl("--bare", "--columns=dst_ip", "list", "Physical_Locator")).not.toContain("10.20.0.7");
      expect(bindingsOf("eth0")).not.toContainEqual(expect.stringContaining(`mn-${a.id}`));
      expect(await macTable(a)).toEqual(own.mac);
      expect(await arpTable(a)).toEqual(own.arp);

      // Stopped: the session cannot tell the bridge anything; the entries still go with the VXLAN port.
      const y = await bind(a, 62);
      await learn(a, "00:aa:bb:cc:ee:02", "10.0.0.22", y.port);
      await device.stop();
      await waitFor("the VTEP not connected", async () => (await http("GET", vtep.uri)).json.connectionState !== "connected", 10_000);
      const feed = await openFeed(fx.gw, fx.stack.adminToken);
      expect((await http("DELETE", y.uri)).status).toBe(204);
      await waitFor("no VXLAN port", async () => (await http("GET", a.uri)).json.vxlanPortIds.length === 0, 5_000);
      await waitFor("the learned entries gone, the device still stopped", async () => !(await macTable(a)).some((e) => e.portId === y.port) && !(await arpTable(a)).some((e) => e.mac === "00:aa:bb:cc:ee:02"), 5_000);
      // Each deletion announced, like an API delete.
      const deleted = () => feed.events.filter((e) => e.event === "deleted" && e.data.uri?.includes(`/bridges/${a.id}/`)).map((e) => e.data.uri.slice(e.data.uri.indexOf("/bridges/")));
      await waitFor("both deletions announced", async () => deleted().length >= 2, 5_000);
      await feed.close();
      expect(deleted().sort()).toEqual([`/bridges/${a.id}/arp_table/10.0.0.22_00-aa-bb-cc-ee-02`, `/bridges/${a.id}/mac_table/00-aa-bb-cc-ee-02_${y.port}`]);
      expect(await macTable(a)).toEqual(own.mac);
      expect(await arpTable(a)).toEqual(own.arp);
      // Back: its new session removes the switch (with the row it learned) and teaches the bridge nothing.
      await device.start();
      await waitFor("the switch gone", async () => !switches().has(`mn-${a.id}`), 15_000);
      for (const t of ["Ucast_Macs_Remote", "Mcast_Macs_Remote", "Ucast_Macs_Local"]) expect(inSwitch(t, y.sw), t).toBe(0);
      await waitFor("the VTEP connected", async () => (await http("GET", vtep.uri)).json.connectionState === "connected", 15_000);
      expect(await macTable(a)).toEqual(own.mac);
      expect(await arpTable(a)).toEqual(own.arp);
    } finally {
      for (const [method, path] of made.reverse()) await http(method, path);
    }
  }, 90_000);

  it("a bridge deleted before its VXLAN port exists (routing down) takes its bindings, each announced deleted, and the device its switch; routing back makes it no VXLAN port; the session does not fail on the bridge gone", async () => {
    const a = (await http("POST", "/bridges", { name: unique("dx"), tenantId: "A" })).json;
    const ls = `mn-${a.id}`;
    const pairs = [["eth0", 63], ["eth1", 64]] as const;
    let feed: Awaited<ReturnType<typeof openFeed>> | undefined;
    await fx.stack.stopService("routing");
    try {
      for (const [portName, vlanId] of pairs) expect((await http("POST", vtep.bindings, { portName, vlanId, networkId: a.id })).status).toBe(201);
      await waitFor("the switch and both VLAN bindings", async () => bindingsOf("eth0").includes(`63 ${ls}`) && bindingsOf("eth1").includes(`64 ${ls}`), 10_000);
      expect((await http("GET", a.uri)).json.vxlanPortIds).toEqual([]);
      // The device learned a MAC in its switch: the session told the bridge, which it cannot tell "none" once the bridge is gone.
      device.ctl("add-ucast-local", ls, "00:aa:bb:cc:ff:01", "10.0.0.9");
      await waitFor("the learned MAC in the bridge", async () => ((await http("GET", `${a.uri}/mac_table`)).json as { macAddr: string }[]).some((e) => e.macAddr === "00:aa:bb:cc:ff:01"), 5_000);
      feed = await openFeed(fx.gw, fx.stack.adminToken);
      expect((await http("DELETE", a.uri)).status).toBe(204);
      const at = Date.now();
      const ofBridge = async () => ((await http("GET", vtep.bindings)).json as { networkId: string }[]).filter((b) => b.networkId === a.id);
      await waitFor("its bindings gone", async () => (await ofBridge()).length === 0, 10_000);
      console.log(`bridge deleted -> its bindings gone: ${Date.now() - at} ms`);
      for (const [port, vlan] of pairs) expectError(await http("GET", `${vtep.uri}/bindings/${port}/${vlan}`), 404);
      const announced = () => feed!.events.filter((e) => e.event === "deleted" && e.data.uri?.includes(`/vteps/${vtep.id}/bindings/`)).map((e) => e.data.uri.slice(e.data.uri.indexOf("/vteps/")));
      await waitFor("both announced deleted", async () => announced().length === 2, 5_000);
      expect(announced().sort()).toEqual(pairs.map(([port, vlan]) => `/vteps/${vtep.id}/bindings/${port}/${vlan}`));
      await waitFor("the switch gone", async () => !switches().has(ls), 10_000);
      for (const port of ["eth0", "eth1"]) expect(bindingsOf(port)).not.toContainEqual(expect.stringContaining(ls));
      // Its deletion handled, a binding naming it is a 404.
      expectError(await http("POST", vtep.bindings, { portName: "eth0", vlanId: 65, networkId: a.id }), 404);
    } finally {
      await feed?.close();
      await fx.stack.startServices("routing");
    }
    // The pairs queued for routing find the bridge gone: no VXLAN port is made for it.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(((await http("GET", "/ports")).json as { type: string; deviceId: string }[]).filter((p) => p.type === "Vxlan" && p.deviceId === a.id)).toEqual([]);
    expect(((await http("GET", vtep.bindings)).json as { networkId: string }[]).filter((b) => b.networkId === a.id)).toEqual([]);
    // The session, which had told the bridge what the device learned, does not fail telling the
    // bridge gone "none": the only warning naming the bridge is of its tables, unread while its
    // bindings were still there (routing down, every reconcile of this VTEP fails anyway).
    const warned = fx.stack.logLines().filter((l) => l["msg"] === "VTEP device not programmed; trying again" && l["vtep"] === vtep.id && JSON.stringify(l["err"]).includes(a.id));
    expect(warned.map((l) => String(l["err"])).filter((e) => !e.startsWith(`bridge ${a.id}'s MAC and ARP tables could not be read`))).toEqual([]);
  }, 60_000);
});

describe("a takeover between two tunnel replicas (vtep-ctl against the real ovsdb-server)", () => {
  it("the replica that takes the session over neither duplicates nor loses a row: Logical_Switch, vlan_bindings, Ucast_Macs_Remote, Mcast_Macs_Remote and Physical_Locator the same rows before and after; what changed meanwhile reaches the device", async () => {
    const device = await OvsdbServer.create();
    const made: string[] = []; // torn down in reverse
    let gw2 = "";
    let mainKilled = false;
    try {
      device.ctl("add-ps", "sw-t");
      device.ctl("set", "Physical_Switch", "sw-t", "management_ips=127.0.0.1");
      for (const p of ["eth0", "eth1"]) device.ctl("add-port", "sw-t", p);
      const replica = await fx.stack.startReplica("tunnel");
      const replicaPid = fx.stack.procs.at(-1)?.child.pid;
      gw2 = await fx.stack.startGateway({ VNM_TUNNEL_ADDR: `${fx.stack.addrs.get("tunnel")},${replica}` });
      const api = (path: string) => (path.startsWith("http") ? path : `${gw2}${path}`);
      const call = async (method: string, path: string, body?: unknown) => http(method, api(path), body);
      const zone = (await call("POST", "/tunnel_zones", { name: unique("tz"), type: "vtep" })).json;
      const vtep = (await call("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: zone.id })).json;
      made.push(vtep.uri);
      await waitFor("the device's ports", async () => (await call("GET", `${vtep.uri}/ports`)).json.length === 2, 15_000);
      const h = (await call("POST", "/hosts", { name: unique("th"), addresses: ["10.40.0.5"], floodingProxyWeight: 1 })).json;
      made.push(`/hosts/${h.id}`);
      expect((await call("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: h.id, ipAddress: "10.40.0.5" })).status).toBe(201);
      made.push(`/tunnel_zones/${zone.id}/hosts/${h.id}`);
      const bridges = [];
      for (const name of ["ta", "tb"]) {
        const b = (await call("POST", "/bridges", { name: unique(name), tenantId: "A" })).json;
        made.push(b.uri);
        const p = (await call("POST", b.ports, { type: "Bridge" })).json;
        made.push(`/ports/${p.id}`);
        expect((await call("POST", `/hosts/${h.id}/ports`, { portId: p.id, interfaceName: `tap-${name}` })).status).toBe(201);
        made.push(`/hosts/${h.id}/ports/${p.id}`);
        bridges.push({ ...b, port: p });
      }
      const [a, b] = bridges as [(typeof bridges)[number], (typeof bridges)[number]];
      for (const [bridge, port, vlanId] of [[a, "eth0", 1], [a, "eth1", 2], [b, "eth0", 3]] as const) {
        const r = await call("POST", vtep.bindings, { portName: port, vlanId, networkId: bridge.id });
        expect(r.status, r.text).toBe(201);
        made.push(r.json.uri);
      }
      for (const [bridge, mac] of [[a, "02:00:00:00:01:0a"], [a, "02:00:00:00:01:0b"], [b, "02:00:00:00:01:0c"]] as const) {
        expect((await call("POST", `${bridge.uri}/mac_table`, { macAddr: mac, portId: bridge.port.id })).status).toBe(201);
      }
      /** Every row of the tables written, as "_uuid …" lines per table, sorted. */
      const rows = () => {
        const out: Record<string, string[]> = {};
        for (const [table, cols] of [
          ["Logical_Switch", "_uuid,name,tunnel_key"],
          ["Physical_Port", "name,vlan_bindings"],
          ["Ucast_Macs_Remote", "_uuid,MAC,logical_switch,locator,ipaddr"],
          ["Mcast_Macs_Remote", "_uuid,MAC,logical_switch,locator_set"],
          ["Physical_Locator", "_uuid,dst_ip"],
        ]) {
          out[table!] = (JSON.parse(device.ctl(`--columns=${cols}`, "--format=json", "list", table!)) as { data: unknown[] }).data.map((r) => JSON.stringify(r)).sort();
        }
        return out;
      };
      const settled = (r: Record<string, string[]>) =>
        r["Logical_Switch"]!.length === 2 && r["Ucast_Macs_Remote"]!.length === 3 && r["Mcast_Macs_Remote"]!.length === 2 && pairs(r) === 3;
      /** The vlan_bindings pairs of every port. */
      const pairs = (r: Record<string, string[]>) => r["Physical_Port"]!.reduce((n, row) => n + (JSON.parse(row) as [string, [string, unknown[]]])[1][1].length, 0);
      await waitFor("everything on the device", async () => settled(rows()), 15_000);
      const before = rows();
      expect(before["Physical_Locator"]).toHaveLength(1);
      expect(device.sessions()).toBe(1);
      const [holder] = device.clientPids();
      expect(holder).toBeDefined();
      mainKilled = holder !== replicaPid;
      process.kill(holder!, "SIGKILL");
      // Meanwhile, a MAC entry is added through the API (the other replica's gateway).
      expect((await call("POST", `${b.uri}/mac_table`, { macAddr: "02:00:00:00:01:0d", portId: b.port.id })).status).toBe(201);
      await waitFor("another replica's session", async () => device.clientPids().length === 1 && device.clientPids()[0] !== holder, 15_000);
      await waitFor("the MAC added meanwhile on the device", async () => rows()["Ucast_Macs_Remote"]!.length === 4, 10_000);
      // Two reconciles more by the new holder, started by announced changes that leave the device's
      // rows as they are (an ARP entry of a MAC no bridge has, made then deleted).
      for (const method of ["POST", "DELETE"] as const) {
        const r = method === "POST" ? await call("POST", `${a.uri}/arp_table`, { ip: "10.40.0.99", mac: "02:00:00:00:09:98" }) : await call("DELETE", `${a.uri}/arp_table/10.40.0.99_02-00-00-00-09-98`);
        expect(r.status).toBe(method === "POST" ? 201 : 204);
        await new Promise((r) => setTimeout(r, 1_500));
      }
      const after = rows();
      for (const table of ["Logical_Switch", "Physical_Port", "Mcast_Macs_Remote", "Physical_Locator"]) expect(after[table], table).toEqual(before[table]);
      const added = after["Ucast_Macs_Remote"]!.filter((r) => !before["Ucast_Macs_Remote"]!.includes(r));
      expect(after["Ucast_Macs_Remote"]!.filter((r) => before["Ucast_Macs_Remote"]!.includes(r))).toEqual(before["Ucast_Macs_Remote"]);
      expect(added).toHaveLength(1);
      expect(added[0]).toContain("02:00:00:00:01:0d");
      expect(device.sessions()).toBe(1);
    } finally {
      if (mainKilled) await fx.stack.startServices("tunnel");
      for (const path of made.reverse()) await http("DELETE", path.startsWith("http") ? path : `${gw2}${path}`);
      await device.destroy();
    }
  }, 120_000);
});
