// Routers, ports, links and routes on real routers end to end (topology.md §1-§4, §9): the
// routing service behind the gateway beside the bridge and lb services, real Postgres, NATS and
// Redis. Each rule of the contract, the "(not MidoNet)" ones included, tenancy, the link race,
// and a bridge's ports going with it across services (also while the routing service is down).
import { describe, expect, it } from "vitest";
import { expectError, expectServiceLossAndReturn, httpClient, useStack, waitFor } from "../harness/harness.ts";

const ROUTER = "application/vnd.org.service.Router-v3+json";
const ROUTERS = "application/vnd.org.service.collection.Router-v3+json";
const PORT = "application/vnd.org.service.Port-v3+json";
const PORTS = "application/vnd.org.service.collection.Port-v3+json";
const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
const ids = (list: { id: string }[]) => list.map((x) => x.id);

/** How long a bridge's ports may outlive its delete's 204 (the routing service's consumer). */
const CASCADE_MS = 10_000;

const router = async (over: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
  const r = await http("POST", "/routers", { name: "r", ...over }, headers);
  expect(r.status, r.text).toBe(201);
  return r.json;
};
const routerPort = async (routerId: string, over: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
  const r = await http("POST", `/routers/${routerId}/ports`, { portAddress: "10.0.0.1", networkAddress: "10.0.0.0", networkLength: 24, ...over }, headers);
  expect(r.status, r.text).toBe(201);
  return r.json;
};
const bridge = async (headers: Record<string, string> = {}) => {
  const r = await http("POST", "/bridges", { name: "b" }, headers);
  expect(r.status, r.text).toBe(201);
  return r.json.id as string;
};
const bridgePort = async (bridgeId: string, over: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
  const r = await http("POST", `/bridges/${bridgeId}/ports`, over, headers);
  expect(r.status, r.text).toBe(201);
  return r.json;
};
const normal = (nextHopPort: string, over: Record<string, unknown> = {}) => ({
  type: "Normal",
  dstNetworkAddr: "10.1.0.0",
  dstNetworkLength: 16,
  srcNetworkAddr: "0.0.0.0",
  srcNetworkLength: 0,
  nextHopPort,
  nextHopGateway: "10.0.0.254",
  weight: 100,
  ...over,
});

describe("routers (§1)", () => {
  it("CRUD with defaults, links, the root document's keys, and PUT replacing", async () => {
    const r = await http("POST", "/routers", { name: "edge" }, { "content-type": ROUTER });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toBe(ROUTER);
    expect(r.headers.get("location")).toBe(r.json.uri);
    expect(r.json).toMatchObject({ name: "edge", adminStateUp: true, asNumber: 0, tenantId: null, loadBalancerId: null, inboundFilterId: null, inboundMirrorIds: [], outboundMirrorIds: [], loadBalancer: null, inboundFilter: null, outboundFilter: null });
    expect(r.json.ports).toBe(`${r.json.uri}/ports`);
    expect(r.json.peerPorts).toBe(`${r.json.uri}/peer_ports`);
    expect(r.json.routes).toBe(`${r.json.uri}/routes`);
    expect((await http("GET", r.json.uri)).json).toEqual(r.json);
    const filter = "0000000f-0000-4000-8000-000000000001";
    expect((await http("POST", "/chains", { id: filter }, { "content-type": "application/json" })).status).toBe(201);
    const put = await http("PUT", r.json.uri, { name: "core", adminStateUp: false, asNumber: 65001, inboundFilterId: filter, id: "0000000f-0000-4000-8000-0000000000ff" });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ id: r.json.id, name: "core", adminStateUp: false, asNumber: 65001, inboundFilterId: filter });
    expect(put.json.inboundFilter).toMatch(new RegExp(`/chains/${filter}$`));
    const back = await http("PUT", r.json.uri, {});
    expect(back.json).toMatchObject({ name: null, adminStateUp: true, asNumber: 0, inboundFilterId: null });
    const list = await http("GET", "/routers", undefined, { accept: ROUTERS });
    expect(list.headers.get("content-type")).toBe(ROUTERS);
    expect(ids(list.json)).toContain(r.json.id);
    const root = (await http("GET", "/")).json;
    expect(root.routers).toMatch(/\/routers$/);
    expect(root.routerTemplate).toMatch(/\/routers\/\{id\}$/);
    expect(root.ports).toMatch(/\/ports$/);
    expect(root.portTemplate).toMatch(/\/ports\/\{id\}$/);
    expect((await http("DELETE", r.json.uri)).status).toBe(204);
    expectError(await http("GET", r.json.uri), 404);
    expectError(await http("DELETE", r.json.uri), 404);
    expectError(await http("PUT", r.json.uri, {}), 404);
  });

  it("refuse bad values with 400 naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "x".repeat(256) }, "name"],
      [{ loadBalancerId: "lb" }, "loadBalancerId"],
      [{ inboundFilterId: "chain" }, "inboundFilterId"],
      [{ outboundFilterId: 7 }, "outboundFilterId"],
      [{ asNumber: "many" }, "asNumber"],
      [{ adminStateUp: "sometimes" }, "adminStateUp"],
      [{ inboundMirrorIds: ["m"] }, "inboundMirrorIds"],
      [{ outboundMirrorIds: Array(65).fill("0000000f-0000-4000-8000-000000000001") }, "outboundMirrorIds"],
    ];
    for (const [body, property] of cases) {
      const r = await http("POST", "/routers", body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property), property).toEqual([property]);
    }
    expect((await http("POST", "/routers", { name: "x".repeat(255) })).status).toBe(201);
  });

  it("?tenant_id= filters, and pages follow Link", async () => {
    const t = `t-${fx.stack.id}-filter`;
    const a = await router({ tenantId: t });
    const b = await router({ tenantId: t });
    expect(ids((await http("GET", `/routers?tenant_id=${t}`)).json)).toEqual([a.id, b.id]);
    expect((await http("GET", "/routers?tenant_id=nobody")).json).toEqual([]);
    const page = await http("GET", `/routers?tenant_id=${t}&limit=1`);
    expect(ids(page.json)).toEqual([a.id]);
    const next = /<([^>]+)>; rel="next"/.exec(page.headers.get("link") ?? "")?.[1];
    expect(ids((await http("GET", next!)).json)).toEqual([b.id]);
  });

  it("a load balancer must exist (404); the router cannot go while it has one (409), and can once cleared", async () => {
    const missing = await http("POST", "/routers", { loadBalancerId: "0000000f-0000-4000-8000-00000000beef" });
    expectError(missing, 404);
    expect(missing.json.message).toContain("0000000f-0000-4000-8000-00000000beef");
    const lb = (await http("POST", "/load_balancers", {})).json;
    const r = await router({ loadBalancerId: lb.id });
    expect(r.loadBalancer).toBe(lb.uri);
    expectError(await http("DELETE", r.uri), 409);
    expect((await http("GET", r.uri)).status).toBe(200);
    expect((await http("PUT", r.uri, { loadBalancerId: null })).json.loadBalancerId).toBeNull();
    expect((await http("DELETE", r.uri)).status).toBe(204);
  });

  it(`a load balancer's read-only routerId shows the router naming it (within ${CASCADE_MS / 1000} s), and null once cleared or the router is gone`, async () => {
    const lb = (await http("POST", "/load_balancers", {})).json;
    const other = (await http("POST", "/load_balancers", {})).json;
    const routerId = async (uri: string) => (await http("GET", uri)).json.routerId;
    const r = await router({ loadBalancerId: lb.id });
    await waitFor("the load balancer to show its router", async () => (await routerId(lb.uri)) === r.id, CASCADE_MS);
    expect((await http("GET", lb.uri)).json.router).toBe(r.uri);
    // Moved to another load balancer: the first forgets the router, the second shows it.
    expect((await http("PUT", r.uri, { loadBalancerId: other.id })).status).toBe(200);
    await waitFor("the router to move", async () => (await routerId(lb.uri)) === null && (await routerId(other.uri)) === r.id, CASCADE_MS);
    expect((await http("PUT", r.uri, { loadBalancerId: null })).status).toBe(200);
    await waitFor("the router to leave", async () => (await routerId(other.uri)) === null, CASCADE_MS);
    const s = await router({ loadBalancerId: lb.id });
    await waitFor("the second router shown", async () => (await routerId(lb.uri)) === s.id, CASCADE_MS);
    await http("PUT", s.uri, { loadBalancerId: null });
    expect((await http("DELETE", s.uri)).status).toBe(204);
    await waitFor("the deleted router gone from it", async () => (await routerId(lb.uri)) === null, CASCADE_MS);
  });

  it(`deleting the load balancer clears the router's loadBalancerId (within ${CASCADE_MS / 1000} s, announced), and the router can then go`, async () => {
    const lb = (await http("POST", "/load_balancers", {})).json;
    const r = await router({ loadBalancerId: lb.id });
    expect((await http("DELETE", lb.uri)).status).toBe(204);
    await waitFor("the router to lose its load balancer", async () => (await http("GET", r.uri)).json.loadBalancerId === null, CASCADE_MS);
    expect((await http("GET", r.uri)).json.loadBalancer).toBeNull();
    await waitFor("the router's update on the bus", async () => fx.events.some((e) => e.subject.endsWith("routing.Router.updated") && e.data["id"] === r.id), CASCADE_MS);
    // A deleted load balancer cannot be given to a router (404), and the router can go.
    expectError(await http("PUT", r.uri, { loadBalancerId: lb.id }), 404);
    expect((await http("DELETE", r.uri)).status).toBe(204);
  });
});

describe("ports (§2)", () => {
  it("router ports: addresses, Local route, MAC lower case, portSubnet, links, listed under the router and at /ports", async () => {
    const r = await router();
    const p = await http("POST", `/routers/${r.id}/ports`, { portAddress: "10.0.0.1", networkAddress: "10.0.0.0", networkLength: 24, portMac: "02:AB:CD:00:00:01" }, { "content-type": PORT });
    expect(p.status).toBe(201);
    expect(p.headers.get("location")).toBe(p.json.uri);
    expect(p.json.uri).toMatch(/\/ports\/[0-9a-f-]{36}$/);
    expect(p.json).toMatchObject({
      type: "Router",
      deviceId: r.id,
      device: r.uri,
      adminStateUp: true,
      portAddress: "10.0.0.1",
      networkAddress: "10.0.0.0",
      networkLength: 24,
      portSubnet: ["10.0.0.1/24"],
      portMac: "02:ab:cd:00:00:01",
      peerId: null,
      peer: null,
      hostId: null,
      interfaceName: null,
      host: null,
      hostInterfacePort: null,
      active: false,
      vifId: null,
      inboundFilter: null,
    });
    expect(p.json.link).toBe(`${p.json.uri}/link`);
    expect(p.json.portGroups).toBe(`${p.json.uri}/port_groups`);
    expect(p.json).not.toHaveProperty("tenantId");
    expect(p.json).not.toHaveProperty("devicePath");
    // networkAddress is always the network of portAddress/networkLength; a MAC is made when absent.
    const q = await routerPort(r.id, { portAddress: "192.168.7.9", networkAddress: undefined, networkLength: 16 });
    expect(q).toMatchObject({ networkAddress: "192.168.0.0", portSubnet: ["192.168.7.9/16"] });
    expect(q.portMac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    const listed = await http("GET", `/routers/${r.id}/ports`, undefined, { accept: PORTS });
    expect(listed.headers.get("content-type")).toBe(PORTS);
    expect(ids(listed.json)).toEqual([p.json.id, q.id]);
    expect(ids((await http("GET", "/ports")).json)).toEqual(expect.arrayContaining([p.json.id, q.id]));
    expect((await http("GET", p.json.uri)).json).toEqual(p.json);
    // The Local route (§4).
    const routes = (await http("GET", `/routers/${r.id}/routes`)).json;
    expect(routes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: "Local", srcNetworkAddr: "0.0.0.0", srcNetworkLength: 0, dstNetworkAddr: "10.0.0.1", dstNetworkLength: 32, nextHopPort: p.json.id, nextHopGateway: null, weight: 0, learned: false, routerId: r.id }),
        expect.objectContaining({ type: "Local", dstNetworkAddr: "192.168.7.9", nextHopPort: q.id }),
      ]),
    );
    expect(routes).toHaveLength(2);
  });

  it("router ports: invalid values are 400 naming the field; the network must contain the address (not MidoNet)", async () => {
    const r = await router();
    const cases: [Record<string, unknown>, string][] = [
      [{ portAddress: "10.0.0" }, "portAddress"],
      [{ networkAddress: "10.0.0.0.0" }, "networkAddress"],
      [{ networkLength: 33 }, "networkLength"],
      [{ networkLength: -1 }, "networkLength"],
      [{ portMac: "not-a-mac" }, "portMac"],
      [{ networkAddress: "10.9.0.0" }, "networkAddress"],
      [{ type: "Bridge" }, "type"],
      [{ type: "Vxlan" }, "type"],
      [{ vlanId: 4096 }, "vlanId"],
      [{ inboundMirrorIds: ["m"] }, "inboundMirrorIds"],
      [{ vifId: "v" }, "vifId"],
    ];
    for (const [over, property] of cases) {
      const res = await http("POST", `/routers/${r.id}/ports`, { portAddress: "10.0.0.1", networkAddress: "10.0.0.0", networkLength: 24, ...over });
      expectError(res, 400);
      expect(res.json.violations.map((v: { property: string }) => v.property), property).toEqual([property]);
    }
    expect((await http("GET", `/routers/${r.id}/ports`)).json).toEqual([]);
    // An unaddressed router port (MidoNet 5 allows one): no Local route.
    const bare = await routerPort(r.id, { portAddress: undefined, networkAddress: undefined, networkLength: undefined });
    expect(bare).toMatchObject({ portAddress: null, networkAddress: null, portSubnet: [] });
    expect((await http("GET", `/routers/${r.id}/routes`)).json).toEqual([]);
  });

  it("bridge ports: vlanId in [0, 4095] (not MidoNet), type must be Bridge, listed under the bridge only", async () => {
    const b = await bridge();
    const p = await http("POST", `/bridges/${b}/ports`, { vlanId: 4095 }, { "content-type": PORT });
    expect(p.status).toBe(201);
    expect(p.json).toMatchObject({ type: "Bridge", deviceId: b, vlanId: 4095, portAddress: null, portMac: null });
    expect(p.json.device).toMatch(new RegExp(`/bridges/${b}$`));
    expect((await bridgePort(b)).vlanId).toBe(0);
    for (const [body, property] of [[{ vlanId: 4096 }, "vlanId"], [{ vlanId: -1 }, "vlanId"], [{ type: "Router" }, "type"], [{ type: "Vxlan" }, "type"], [{ type: "Hub" }, "type"]] as const) {
      const res = await http("POST", `/bridges/${b}/ports`, body);
      expectError(res, 400);
      expect(res.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    }
    expect((await http("GET", `/bridges/${b}/ports`)).json).toHaveLength(2);
    expect((await http("GET", `/bridges/${b}/vxlan_ports`)).json).toEqual([]);
  });

  it("a missing device is a 404 for its ports' POST and GET, before the body is judged", async () => {
    const none = "0000000f-0000-4000-8000-0000000000aa";
    for (const path of [`/routers/${none}/ports`, `/bridges/${none}/ports`, "/routers/nope/ports", "/bridges/nope/ports"]) {
      expectError(await http("POST", path, { vlanId: 99999, portAddress: "x" }), 404);
      expectError(await http("GET", path), 404);
    }
    expectError(await http("GET", `/routers/${none}/peer_ports`), 404);
    expectError(await http("GET", `/bridges/${none}/peer_ports`), 404);
    expectError(await http("GET", "/ports/nope"), 404);
    expectError(await http("GET", `/ports/${none}`), 404);
  });

  it("PUT changes adminStateUp, vlanId, vifId, filters and mirrors only; device, type, addresses and MAC stay", async () => {
    const r = await router();
    const p = await routerPort(r.id);
    const vif = "0000000f-0000-4000-8000-000000000011";
    const put = await http("PUT", p.uri, { ...p, adminStateUp: false, vifId: vif, portAddress: "10.0.0.7", networkLength: 8, portMac: "02:00:00:00:00:99", type: "Bridge", deviceId: vif });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({ ...p, adminStateUp: false, vifId: vif });
    const b = await bridge();
    const bp = await bridgePort(b);
    expect((await http("PUT", bp.uri, { ...bp, vlanId: 12 })).json).toEqual({ ...bp, vlanId: 12 });
    // PUT replaces: what the body leaves out returns to its default.
    expect((await http("PUT", bp.uri, {})).json).toEqual(bp);
    const bad = await http("PUT", bp.uri, { vlanId: 5000 });
    expectError(bad, 400);
    expect(bad.json.violations.map((v: { property: string }) => v.property)).toEqual(["vlanId"]);
  });
});

describe("links (§3)", () => {
  it("link and unlink: both sides show each other; peer_ports lists them; Location is <port uri>/link", async () => {
    const r1 = await router();
    const r2 = await router();
    const a = await routerPort(r1.id);
    const b = await routerPort(r2.id);
    const linked = await http("POST", `${a.uri}/link`, { peerId: b.id }, { "content-type": "application/vnd.org.service.PortLink-v1+json" });
    expect(linked.status).toBe(201);
    expect(linked.headers.get("location")).toBe(`${a.uri}/link`);
    expect(linked.headers.get("content-type")).toBe(PORT);
    expect(linked.json).toMatchObject({ id: a.id, peerId: b.id, peer: b.uri });
    expect((await http("GET", b.uri)).json).toMatchObject({ peerId: a.id, peer: a.uri });
    expect(ids((await http("GET", `/routers/${r1.id}/peer_ports`)).json)).toEqual([b.id]);
    expect(ids((await http("GET", `/routers/${r2.id}/peer_ports`)).json)).toEqual([a.id]);
    expect((await http("DELETE", `${b.uri}/link`)).status).toBe(204);
    expect((await http("GET", a.uri)).json).toMatchObject({ peerId: null, peer: null });
    expect((await http("GET", b.uri)).json.peerId).toBeNull();
    const again = await http("DELETE", `${a.uri}/link`);
    expectError(again, 404);
    // The python client sends the whole port with peerId set: other fields are ignored.
    const whole = await http("POST", `${a.uri}/link`, { ...a, peerId: b.id });
    expect(whole.status).toBe(201);
    expect(whole.json.adminStateUp).toBe(true);
  });

  it("an unlink honours If-Match and If-None-Match against the port as its GET answers it (412 with its ETag), as every DELETE does", async () => {
    const a = await routerPort((await router()).id);
    const b = await routerPort((await router()).id);
    const linked = await http("POST", `${a.uri}/link`, { peerId: b.id }, { "content-type": "application/vnd.org.service.PortLink-v1+json" });
    expect(linked.status).toBe(201);
    const tag = (await http("GET", a.uri)).headers.get("etag")!;
    const refusals: Record<string, string>[] = [{ "if-match": '"not-its-tag"' }, { "if-none-match": "*" }, { "if-none-match": tag }];
    for (const conditions of refusals) {
      const refused = await http("DELETE", `${a.uri}/link`, undefined, conditions);
      expectError(refused, 412);
      expect(refused.headers.get("etag")).toBe(tag);
    }
    expect((await http("GET", b.uri)).json.peerId).toBe(a.id);
    expect((await http("DELETE", `${a.uri}/link`, undefined, { "if-match": tag })).status).toBe(204);
    expect((await http("GET", b.uri)).json.peerId).toBeNull();
  });

  it("refused with 409 'Ports are not linkable.' when linked, to itself, or on one device; 404 for missing ports; nothing changes", async () => {
    const r1 = await router();
    const r2 = await router();
    const a = await routerPort(r1.id);
    const a2 = await routerPort(r1.id, { portAddress: "10.0.1.1", networkAddress: "10.0.1.0" });
    const b = await routerPort(r2.id);
    const c = await bridgePort(await bridge());
    expect((await http("POST", `${a.uri}/link`, { peerId: b.id })).status).toBe(201);
    for (const [from, to] of [[a, c], [c, a], [b, c], [c, c], [a2, a2], [a2, a], [a, a2]] as const) {
      const res = await http("POST", `${from.uri}/link`, { peerId: to.id });
      expectError(res, 409);
      expect(res.json.message).toBe("Ports are not linkable.");
    }
    const d = await routerPort(r2.id, { portAddress: "10.0.2.1", networkAddress: "10.0.2.0" });
    expect((await http("POST", `${c.uri}/link`, { peerId: d.id })).status).toBe(201); // a router port to a bridge port
    const none = "0000000f-0000-4000-8000-0000000000bb";
    expectError(await http("POST", `${a2.uri}/link`, { peerId: none }), 404);
    expectError(await http("POST", `/ports/${none}/link`, { peerId: a2.id }), 404);
    const bad = await http("POST", `${a2.uri}/link`, { peerId: "p" });
    expectError(bad, 400);
    expect(bad.json.violations.map((v: { property: string }) => v.property)).toEqual(["peerId"]);
    expect((await http("GET", a2.uri)).json.peerId).toBeNull();
    expect((await http("GET", a.uri)).json.peerId).toBe(b.id);
  });

  it("of many parallel links of one port, exactly one wins, the rest 409, never a half link", async () => {
    for (let round = 0; round < 3; round++) {
      const hub = await routerPort((await router()).id);
      const others = await Promise.all(Array.from({ length: 8 }, async () => routerPort((await router()).id)));
      const tries = await Promise.all(others.map((o, i) => (i % 2 ? http("POST", `${hub.uri}/link`, { peerId: o.id }) : http("POST", `${o.uri}/link`, { peerId: hub.id }))));
      expect(tries.map((t) => t.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
      const now = (await http("GET", hub.uri)).json;
      for (const o of others) {
        const peer = (await http("GET", o.uri)).json.peerId;
        expect(peer).toBe(o.id === now.peerId ? hub.id : null);
      }
      expect(others.map((o) => o.id)).toContain(now.peerId);
    }
  });

  it("a port delete unlinks its peer and deletes its routes; the peer is announced as updated", async () => {
    const r1 = await router();
    const a = await routerPort(r1.id);
    const b = await routerPort((await router()).id);
    await http("POST", `${a.uri}/link`, { peerId: b.id });
    const route = await http("POST", `/routers/${r1.id}/routes`, normal(a.id));
    expect(route.status).toBe(201);
    expect((await http("DELETE", a.uri)).status).toBe(204);
    expect((await http("GET", b.uri)).json.peerId).toBeNull();
    expectError(await http("GET", route.json.uri), 404);
    expect((await http("GET", `/routers/${r1.id}/routes`)).json).toEqual([]);
    await waitFor("the peer's update on the bus", async () => fx.events.some((e) => e.subject.endsWith("routing.Port.updated") && e.data["id"] === b.id), 10_000);
  });
});

describe("routes on real routers (§4)", () => {
  it("a missing router is a 404 for the list and the POST, whatever the body", async () => {
    const none = "0000000f-0000-4000-8000-0000000000cc";
    expectError(await http("GET", `/routers/${none}/routes`), 404);
    const r = await http("POST", `/routers/${none}/routes`, { type: "Nope" });
    expectError(r, 404);
    expect(r.json.message).toContain(none);
  });

  it("a Normal route's next hop must be a port of this router: 400 naming nextHopPort", async () => {
    const r1 = await router();
    const r2 = await router();
    const own = await routerPort(r1.id);
    const foreign = await routerPort(r2.id);
    const bp = await bridgePort(await bridge());
    for (const port of [foreign.id, bp.id, "0000000f-0000-4000-8000-0000000000dd"]) {
      const res = await http("POST", `/routers/${r1.id}/routes`, normal(port));
      expectError(res, 400);
      expect(res.json.violations).toEqual([{ property: "nextHopPort", message: "This type of route requires a next hop port that is a port on the same router." }]);
    }
    const ok = await http("POST", `/routers/${r1.id}/routes`, normal(own.id));
    expect(ok.status).toBe(201);
    expect(ok.json).toMatchObject({ routerId: r1.id, nextHopPort: own.id });
    expect(ok.json.router).toBe(r1.uri);
    const blackhole = await http("POST", `/routers/${r1.id}/routes`, normal(own.id, { type: "BlackHole", nextHopPort: undefined, nextHopGateway: undefined }));
    expect(blackhole.status).toBe(201);
    const list = ids((await http("GET", `/routers/${r1.id}/routes`)).json);
    expect(list).toEqual(expect.arrayContaining([ok.json.id, blackhole.json.id]));
    expect(list).toHaveLength(3); // with the port's Local route
  });

  it("a router delete takes its ports (unlinking their peers), their routes and its own routes, each announced; a router with linked ports can go", async () => {
    const r = await router();
    const p = await routerPort(r.id);
    const peer = await routerPort((await router()).id);
    await http("POST", `${p.uri}/link`, { peerId: peer.id });
    const normalRoute = (await http("POST", `/routers/${r.id}/routes`, normal(p.id))).json;
    const reject = (await http("POST", `/routers/${r.id}/routes`, normal(p.id, { type: "Reject", nextHopPort: undefined, nextHopGateway: undefined }))).json;
    const local = (await http("GET", `/routers/${r.id}/routes`)).json.find((x: { type: string }) => x.type === "Local");
    expect((await http("DELETE", r.uri)).status).toBe(204);
    for (const uri of [r.uri, p.uri, normalRoute.uri, reject.uri, local.uri]) expectError(await http("GET", uri), 404);
    expectError(await http("GET", `${r.uri}/routes`), 404);
    expectError(await http("GET", `${r.uri}/ports`), 404);
    expectError(await http("POST", `${r.uri}/ports`, {}), 404);
    expect((await http("GET", peer.uri)).json.peerId).toBeNull();
    expect(ids((await http("GET", "/ports")).json)).not.toContain(p.id);
    await waitFor("every deletion on the bus", async () => {
      const gone = new Set(fx.events.filter((e) => e.subject.endsWith(".deleted")).map((e) => String(e.data["id"])));
      return [r.id, p.id, normalRoute.id, reject.id, local.id].every((id) => gone.has(id));
    }, 10_000);
  });
});

describe("a bridge's ports go with the bridge (across services)", () => {
  it(`within ${CASCADE_MS / 1000} s of the bridge's 204, as port deletes (a linked router port is unlinked)`, async () => {
    const b = await bridge();
    const p1 = await bridgePort(b);
    const p2 = await bridgePort(b);
    const rp = await routerPort((await router()).id);
    await http("POST", `${p1.uri}/link`, { peerId: rp.id });
    expect((await http("DELETE", `/bridges/${b}`)).status).toBe(204);
    const started = Date.now();
    await waitFor("the bridge's ports to go", async () => (await http("GET", p1.uri)).status === 404 && (await http("GET", p2.uri)).status === 404, CASCADE_MS);
    expect(Date.now() - started).toBeLessThan(CASCADE_MS);
    expect((await http("GET", rp.uri)).json.peerId).toBeNull();
    expectError(await http("GET", `/bridges/${b}/ports`), 404);
    expectError(await http("POST", `/bridges/${b}/ports`, {}), 404);
  });

  it("a port created while its bridge is deleted never survives it", async () => {
    for (let round = 0; round < 5; round++) {
      const b = await bridge();
      const [created] = await Promise.all([Promise.all([1, 2, 3].map(() => http("POST", `/bridges/${b}/ports`, {}))), http("DELETE", `/bridges/${b}`)]);
      for (const r of created) expect([201, 404]).toContain(r.status);
      const made = created.filter((r) => r.status === 201).map((r) => r.json.uri as string);
      await waitFor(`round ${round}: no port left on the deleted bridge`, async () => (await Promise.all(made.map(async (u) => (await http("GET", u)).status))).every((s) => s === 404), CASCADE_MS);
    }
  });

  it("a bridge deleted while the routing service is down takes its ports when it is back", async () => {
    const b = await bridge();
    const p = await bridgePort(b);
    await fx.stack.stopService("routing");
    expect((await http("DELETE", `/bridges/${b}`)).status).toBe(204);
    await fx.stack.startServices("routing");
    await waitFor("the port to go", async () => (await http("GET", p.uri)).status === 404, 20_000);
  });
});

describe("tenancy (§9)", () => {
  const users = new Map<string, string>();
  const as = async (tenant: string, role = "tenant_admin") => {
    const key = `${tenant}/${role}`;
    if (!users.has(key)) {
      const name = `u-${fx.stack.id}-${tenant}-${role}`;
      await http("POST", "/users", { name, password: "tenant-password-1", tenantId: tenant, roles: [role] });
      users.set(key, await fx.stack.login(fx.gw, name, "tenant-password-1"));
    }
    return { "x-auth-token": users.get(key)! };
  };

  it("a tenant admin's router takes its tenant; another tenant's is 403 to name", async () => {
    const a = await as("A");
    const r = await router({}, a);
    expect(r.tenantId).toBe("A");
    expectError(await http("POST", "/routers", { tenantId: "B" }, a), 403);
    const p = await routerPort(r.id, {}, a);
    expect(p.deviceId).toBe(r.id);
    expect(ids((await http("GET", "/ports", undefined, a)).json)).toContain(p.id);
  });

  it("another tenant's router and port are 404 on every method, naming nothing of it; lists show only the caller's", async () => {
    const a = await as("A");
    const b = await as("B");
    const theirs = await router({}, b);
    const theirPort = await routerPort(theirs.id, {}, b);
    const theirBridge = await bridge(b);
    const theirBridgePort = await bridgePort(theirBridge, {}, b);
    const mine = await router({}, a);
    for (const [m, path] of [
      ["GET", theirs.uri],
      ["PUT", theirs.uri],
      ["DELETE", theirs.uri],
      ["GET", `${theirs.uri}/ports`],
      ["POST", `${theirs.uri}/ports`],
      ["GET", `${theirs.uri}/peer_ports`],
      ["GET", `${theirs.uri}/routes`],
      ["GET", theirPort.uri],
      ["PUT", theirPort.uri],
      ["DELETE", theirPort.uri],
      ["DELETE", `${theirPort.uri}/link`],
      ["GET", theirBridgePort.uri],
      ["GET", `/bridges/${theirBridge}/ports`],
      ["POST", `/bridges/${theirBridge}/ports`],
    ] as const) {
      const res = await http(m, path, m === "POST" || m === "PUT" ? {} : undefined, a);
      // Routes are administrators' only (403); everything else of theirs is hidden (404).
      if (path.endsWith("/routes")) {
        expectError(res, 403);
        continue;
      }
      expectError(res, 404);
      expect(res.text, `${m} ${path}`).not.toContain('"B"');
    }
    const routers = ids((await http("GET", "/routers", undefined, a)).json);
    expect(routers).toContain(mine.id);
    expect(routers).not.toContain(theirs.id);
    expect((await http("GET", "/routers?tenant_id=B", undefined, a)).json).toEqual([]);
    const ports = ids((await http("GET", "/ports", undefined, a)).json);
    expect(ports).not.toContain(theirPort.id);
    expect(ports).not.toContain(theirBridgePort.id);
    expect((await http("GET", theirPort.uri)).status).toBe(200); // still there
  });

  it("links across tenants are 404 both ways, and neither port is linked", async () => {
    const a = await as("A");
    const b = await as("B");
    const own = await routerPort((await router({}, a)).id, {}, a);
    const other = await routerPort((await router({}, b)).id, {}, b);
    expectError(await http("POST", `${own.uri}/link`, { peerId: other.id }, a), 404);
    expectError(await http("POST", `${other.uri}/link`, { peerId: own.id }, a), 404);
    expect((await http("GET", own.uri)).json.peerId).toBeNull();
    expect((await http("GET", other.uri)).json.peerId).toBeNull();
  });

  it("a tenant user reads but may not write (403)", async () => {
    const a = await as("A");
    const user = await as("A", "tenant_user");
    const r = await router({}, a);
    expect((await http("GET", r.uri, undefined, user)).status).toBe(200);
    expectError(await http("POST", "/routers", {}, user), 403);
    expectError(await http("POST", `${r.uri}/ports`, {}, user), 403);
  });

  it("a bridge's ports follow the bridge to another tenant", async () => {
    const b = await bridge({});
    await http("PUT", `/bridges/${b}`, { name: "b", tenantId: "C" });
    const p = await bridgePort(b);
    const c = await as("C");
    expect((await http("GET", p.uri, undefined, c)).status).toBe(200);
    expect((await http("PUT", `/bridges/${b}`, { name: "b", tenantId: "D" })).status).toBe(200);
    await waitFor("the port to follow its bridge", async () => (await http("GET", p.uri, undefined, c)).status === 404, CASCADE_MS);
    const d = await as("D");
    expect((await http("GET", p.uri, undefined, d)).status).toBe(200);
  });
});

describe("faults", () => {
  it("with the bridge service down, a bridge port's POST and its lists are 503 naming it, and nothing is created", async () => {
    const b = await bridge();
    const before = (await http("GET", "/ports")).json.length;
    await fx.stack.stopService("bridge");
    try {
      const r = await http("POST", `/bridges/${b}/ports`, {});
      expectError(r, 503);
      expect(r.json.message).toContain("bridge service");
      expectError(await http("GET", `/bridges/${b}/ports`), 503);
      expect((await http("GET", "/ports")).json.length).toBe(before);
      // Router ports need no other service.
      expect((await http("POST", `/routers/${(await router()).id}/ports`, {})).status).toBe(201);
    } finally {
      await fx.stack.startServices("bridge");
    }
    await waitFor("the bridge service", async () => (await http("POST", `/bridges/${b}/ports`, {})).status === 201, 20_000);
  });

  it("with the lb service down, a router naming a load balancer is 503 naming it, and nothing is created", async () => {
    const lb = (await http("POST", "/load_balancers", {})).json;
    const before = (await http("GET", "/routers")).json.length;
    await fx.stack.stopService("lb");
    try {
      const r = await http("POST", "/routers", { loadBalancerId: lb.id });
      expectError(r, 503);
      expect(r.json.message).toContain("lb service");
      expect((await http("GET", "/routers")).json.length).toBe(before);
    } finally {
      await fx.stack.startServices("lb");
    }
    await waitFor("the lb service", async () => (await http("POST", "/routers", { loadBalancerId: lb.id })).status === 201, 20_000);
  });

  it("the routing service lost: routers and ports are 503 naming it, the rest works, and back unaided", async () => {
    await expectServiceLossAndReturn(fx, "routing", "/routers");
    await expectServiceLossAndReturn(fx, "routing", "/ports");
  });
});
