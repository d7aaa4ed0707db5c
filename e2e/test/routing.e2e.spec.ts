// Routes and L2 insertions end to end (docs/decisions.md, "Routing"): the routing service behind
// the gateway, real Postgres, NATS and Redis. Each rule, each bad input with its status and error
// body, the root document, /events and the collection cache.
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, httpClient, openFeed, useStack, waitFor, expectServiceLossAndReturn } from "../harness/harness.ts";

const ROUTE = "application/vnd.org.service.Route-v1+json";
const ROUTES = "application/vnd.org.service.collection.Route-v1+json";
const INSERTION = "application/vnd.org.service.L2Insertion-v1+json";
const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);

// Routes live on real routers (topology.md §4): a router and a port of it, made before the tests.
let ROUTER = "";
let PORT = "";
beforeAll(async () => {
  ROUTER = (await http("POST", "/routers", { name: "routes" })).json.id;
  PORT = (await http("POST", `/routers/${ROUTER}/ports`, {})).json.id;
});
const normal = (over: Record<string, unknown> = {}) => ({
  type: "Normal",
  dstNetworkAddr: "10.1.0.0",
  dstNetworkLength: 16,
  srcNetworkAddr: "0.0.0.0",
  srcNetworkLength: 0,
  nextHopPort: PORT,
  nextHopGateway: "10.0.0.1",
  weight: 100,
  ...over,
});
let portN = 0;
/** A fresh port id, so each test's insertions stand apart. */
const port = () => `0000000c-0000-4000-8000-${String(++portN).padStart(12, "0")}`;
const insertion = (over: Record<string, unknown> = {}) => ({ mac: "02:AB:00:00:00:01", portId: port(), srvPortId: port(), position: 1, ...over });

describe("routes", () => {
  it("are created under their router (the path's), read at /routes/{id}, listed per router", async () => {
    const r = await http("POST", `/routers/${ROUTER}/routes`, { ...normal(), routerId: "0000000a-0000-4000-8000-0000000000ff", learned: true }, { "content-type": ROUTE });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toBe(ROUTE);
    expect(r.json).toMatchObject({ ...normal(), routerId: ROUTER, learned: false });
    expect(r.headers.get("location")).toBe(r.json.uri);
    expect(r.json.uri).toMatch(/\/routes\/[0-9a-f-]{36}$/);
    expect((await http("GET", r.json.uri)).json).toEqual(r.json);
    const list = await http("GET", `/routers/${ROUTER}/routes`, undefined, { accept: ROUTES });
    expect(list.headers.get("content-type")).toBe(ROUTES);
    expect(list.json.map((x: { id: string }) => x.id)).toContain(r.json.id);
    // A router that does not exist has no list of routes (404, topology.md §4).
    expectError(await http("GET", `/routers/${port()}/routes`), 404);
    expect((await http("GET", "/")).json.routeTemplate).toMatch(/\/routes\/\{id\}$/);
  });

  it("take the other types without a next hop, and refuse one on them (400 naming the field)", async () => {
    for (const type of ["BlackHole", "Reject", "Local"]) {
      const ok = await http("POST", `/routers/${ROUTER}/routes`, normal({ type, nextHopPort: undefined, nextHopGateway: undefined }));
      expect(ok.status).toBe(201);
      expect(ok.json).toMatchObject({ type, nextHopPort: null, nextHopGateway: null });
      const bad = await http("POST", `/routers/${ROUTER}/routes`, normal({ type, nextHopGateway: undefined }));
      expectError(bad, 400);
      expect(bad.json.violations).toEqual([{ property: "nextHopPort", message: `must not be set for a ${type} route` }]);
    }
  });

  it("refuse bad values with 400 naming each field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [normal({ nextHopPort: undefined }), "nextHopPort"],
      [normal({ nextHopGateway: undefined }), "nextHopGateway"],
      [normal({ type: "Fip64" }), "type"],
      [normal({ type: undefined }), "type"],
      [normal({ dstNetworkAddr: "10.1.0" }), "dstNetworkAddr"],
      [normal({ srcNetworkAddr: "::1" }), "srcNetworkAddr"],
      [normal({ dstNetworkLength: 33 }), "dstNetworkLength"],
      [normal({ srcNetworkLength: -1 }), "srcNetworkLength"],
      [normal({ weight: -1 }), "weight"],
      [normal({ nextHopPort: "port-1" }), "nextHopPort"],
      [normal({ nextHopGateway: "gw" }), "nextHopGateway"],
    ];
    for (const [body, property] of cases) {
      const r = await http("POST", `/routers/${ROUTER}/routes`, body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property), property).toEqual([property]);
    }
  });

  it("have no PUT (405 with Allow), a malformed or missing id is a 404, and the router link leads to the router", async () => {
    const r = await http("POST", `/routers/${ROUTER}/routes`, normal());
    const put = await http("PUT", r.json.uri, normal());
    expectError(put, 405);
    expect(put.headers.get("allow")).toBe("GET, DELETE");
    expectError(await http("GET", "/routes/not-a-uuid"), 404);
    expectError(await http("POST", "/routers/not-a-uuid/routes", normal()), 404);
    // Under a router id that names nothing, a bad body is a 404 too, before it is judged.
    const missing = await http("POST", "/routers/not-a-uuid/routes", { type: "Reject" });
    expectError(missing, 404);
    expect(missing.json.message).toContain("not-a-uuid");
    expectError(await http("GET", "/routers/not-a-uuid/routes"), 404);
    const router = await http("GET", r.json.router);
    expect(router.status).toBe(200);
    expect(router.json.id).toBe(ROUTER);
    expect((await http("DELETE", r.json.uri)).status).toBe(204);
    expectError(await http("DELETE", r.json.uri), 404);
    expectError(await http("GET", r.json.uri), 404);
  });
});

describe("L2 insertions", () => {
  it("full CRUD with defaults; the MAC is stored lower case", async () => {
    const body = insertion();
    const r = await http("POST", "/l2insertions", body, { "content-type": INSERTION });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ ...body, mac: "02:ab:00:00:00:01", failOpen: false, vlan: 0 });
    const put = await http("PUT", r.json.uri, { ...body, position: 7, failOpen: true, vlan: 4095 });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ position: 7, failOpen: true, vlan: 4095 });
    const back = await http("PUT", r.json.uri, body);
    expect(back.json).toMatchObject({ failOpen: false, vlan: 0 });
    expect((await http("DELETE", r.json.uri)).status).toBe(204);
    expectError(await http("GET", r.json.uri), 404);
    expect((await http("GET", "/")).json.l2insertions).toMatch(/\/l2insertions$/);
  });

  it("refuse bad values with 400 naming each field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [insertion({ mac: "02:ab:00:00:00" }), "mac"],
      [insertion({ mac: undefined }), "mac"],
      [insertion({ portId: "p" }), "portId"],
      [insertion({ srvPortId: undefined }), "srvPortId"],
      [insertion({ position: undefined }), "position"],
      [insertion({ vlan: 4096 }), "vlan"],
      [insertion({ vlan: -1 }), "vlan"],
      [insertion({ failOpen: "sometimes" }), "failOpen"],
    ];
    for (const [body, property] of cases) {
      const r = await http("POST", "/l2insertions", body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property), property).toEqual([property]);
    }
  });

  it("a second insertion for the same ports is a 409; parallel identical creates give exactly one 201", async () => {
    const body = insertion();
    expect((await http("POST", "/l2insertions", body)).status).toBe(201);
    expectError(await http("POST", "/l2insertions", { ...body, position: 9 }), 409);
    const race = insertion();
    const all = await Promise.all(Array.from({ length: 8 }, () => http("POST", "/l2insertions", race)));
    expect(all.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of all.filter((x) => x.status === 409)) expect(r.json.message).toContain(race.portId);
  });

  it("no port is both protected and a service port, in one insertion or across them (400 naming the field)", async () => {
    const p = port();
    const same = await http("POST", "/l2insertions", insertion({ portId: p, srvPortId: p }));
    expectError(same, 400);
    expect(same.json.violations.map((v: { property: string }) => v.property)).toEqual(["srvPortId"]);
    const first = insertion();
    expect((await http("POST", "/l2insertions", first)).status).toBe(201);
    const reverse = await http("POST", "/l2insertions", insertion({ portId: first.srvPortId }));
    expectError(reverse, 400);
    expect(reverse.json.violations.map((v: { property: string }) => v.property)).toEqual(["portId"]);
    const reverse2 = await http("POST", "/l2insertions", insertion({ srvPortId: first.portId }));
    expectError(reverse2, 400);
    expect(reverse2.json.violations.map((v: { property: string }) => v.property)).toEqual(["srvPortId"]);
    // Concurrent writes cannot slip past each other: of two crossing insertions one is refused.
    const [a, b] = [port(), port()];
    const crossing = await Promise.all([http("POST", "/l2insertions", insertion({ portId: a, srvPortId: b })), http("POST", "/l2insertions", insertion({ portId: b, srvPortId: a }))]);
    expect(crossing.map((r) => r.status).sort()).toEqual([201, 400]);
  });

  it("a PUT may not move an insertion to other ports", async () => {
    const body = insertion();
    const r = await http("POST", "/l2insertions", body);
    const moved = await http("PUT", r.json.uri, { ...body, portId: port() });
    expectError(moved, 400);
    expect(moved.json.violations.map((v: { property: string }) => v.property)).toEqual(["portId"]);
  });

  it("are listed by position, then portId, then srvPortId, and filtered by ?port= and ?srv_port=", async () => {
    const p = `0000000d-0000-4000-8000-00000000000${portN % 10}`;
    const srvs = ["0000000e-0000-4000-8000-000000000003", "0000000e-0000-4000-8000-000000000001", "0000000e-0000-4000-8000-000000000002"];
    for (const [i, srv] of srvs.entries()) await http("POST", "/l2insertions", insertion({ portId: p, srvPortId: srv, position: i === 0 ? 1 : 2 }));
    const mine = (await http("GET", `/l2insertions?port=${p}`)).json;
    expect(mine.map((x: { srvPortId: string; position: number }) => `${x.position}/${x.srvPortId.slice(-1)}`)).toEqual(["1/3", "2/1", "2/2"]);
    const all = (await http("GET", "/l2insertions")).json as { position: number; portId: string; srvPortId: string }[];
    const keys = all.map((x) => [x.position, x.portId, x.srvPortId]);
    const sorted = [...keys].sort((x, y) => (x[0] as number) - (y[0] as number) || String(x[1]).localeCompare(String(y[1])) || String(x[2]).localeCompare(String(y[2])));
    expect(keys).toEqual(sorted);
    expect((await http("GET", `/l2insertions?srv_port=${srvs[1]}`)).json.map((x: { portId: string }) => x.portId)).toEqual([p]);
    const bad = await http("GET", "/l2insertions?port=nope");
    expectError(bad, 400);
    expect(bad.json.violations.map((v: { property: string }) => v.property)).toEqual(["port"]);
    // Pages keep that order.
    const page1 = await http("GET", "/l2insertions?limit=2");
    const next = /<([^>]+)>; rel="next"/.exec(page1.headers.get("link") ?? "")?.[1];
    expect(page1.json).toEqual(all.slice(0, 2));
    expect((await http("GET", next!)).json).toEqual(all.slice(2, 4));
  });
});

describe("the rules of each field (routing.proto), as the OpenAPI document states them and the service enforces them", () => {
  /** A field's schema keywords, whatever alternatives (a digit string for an integer, null) the document adds. */
  const keywords = (s: { anyOf?: object[] }) => Object.assign({}, ...(s.anyOf ?? []), s);
  const props = async (name: string) => (await http("GET", "/openapi.json")).json.components.schemas[name].properties;

  it("routes: addresses IPv4, lengths in [0, 32], a weight not negative, a type from its list, a UUID next-hop port", async () => {
    const route = await props("vnm.routing.v1.Route");
    expect(keywords(route.dstNetworkAddr)).toMatchObject({ format: "ipv4" });
    expect(keywords(route.nextHopGateway)).toMatchObject({ format: "ipv4" });
    expect(keywords(route.dstNetworkLength)).toMatchObject({ minimum: 0, maximum: 32 });
    expect(keywords(route.srcNetworkLength)).toMatchObject({ minimum: 0, maximum: 32 });
    expect(keywords(route.weight)).toMatchObject({ minimum: 0 });
    expect(keywords(route.type).enum).toEqual(["Normal", "BlackHole", "Reject", "Local"]);
    expect(keywords(route.nextHopPort)).toMatchObject({ format: "uuid" });
    const cases: [Record<string, unknown>, string, string][] = [
      [{ srcNetworkAddr: "::1" }, "srcNetworkAddr", "must be a valid IPv4 address"],
      [{ dstNetworkLength: 33 }, "dstNetworkLength", "must be greater than or equal to 0 and less than or equal to 32"],
      [{ weight: -1 }, "weight", "must be greater than or equal to 0"],
      [{ type: "Fip64" }, "type", "must be in list [Normal, BlackHole, Reject, Local]"],
    ];
    for (const [over, property, message] of cases) {
      const r = await http("POST", `/routers/${ROUTER}/routes`, normal(over));
      expectError(r, 400);
      expect(r.json.violations, property).toEqual([{ property, message }]);
    }
  });

  it("L2 insertions: a MAC, UUID ports, a VLAN in [0, 4095]", async () => {
    const l2 = await props("vnm.routing.v1.L2Insertion");
    expect(keywords(l2.mac)).toMatchObject({ pattern: "^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$" });
    expect(keywords(l2.portId)).toMatchObject({ format: "uuid" });
    expect(keywords(l2.srvPortId)).toMatchObject({ format: "uuid" });
    expect(keywords(l2.vlan)).toMatchObject({ minimum: 0, maximum: 4095 });
    const vlan = await http("POST", "/l2insertions", insertion({ vlan: 4096 }));
    expectError(vlan, 400);
    expect(vlan.json.violations).toEqual([{ property: "vlan", message: "must be greater than or equal to 0 and less than or equal to 4095" }]);
    const mac = await http("POST", "/l2insertions", insertion({ mac: "02:ab:00:00:00" }));
    expect(mac.json.violations).toEqual([{ property: "mac", message: "must be six groups of two hex digits separated by ':', e.g. 02:00:00:00:00:01" }]);
  });
});

describe("like every other kind", () => {
  it("changes reach /events and invalidate the cached lists", async () => {
    const feed = await openFeed(fx.gw, fx.stack.adminToken);
    const before = (await http("GET", `/routers/${ROUTER}/routes`)).json.length;
    expect((await http("GET", `/routers/${ROUTER}/routes`)).json.length).toBe(before); // cached now
    const r = await http("POST", `/routers/${ROUTER}/routes`, normal());
    expect((await http("GET", `/routers/${ROUTER}/routes`)).json.length).toBe(before + 1);
    const i = await http("POST", "/l2insertions", insertion());
    await waitFor("both creations on /events", async () => feed.events.some((e) => e.data.id === r.json.id && e.data.kind === "Route") && feed.events.some((e) => e.data.id === i.json.id && e.data.kind === "L2Insertion"), 10_000);
    await feed.close();
  });

  it("are for administrators only: a tenant admin gets 403", async () => {
    const name = `ta-${fx.stack.id}`;
    await http("POST", "/users", { name, password: "tenant-password-1", tenantId: "T", roles: ["tenant_admin"] });
    const token = await fx.stack.login(fx.gw, name, "tenant-password-1");
    expectError(await http("GET", `/routers/${ROUTER}/routes`, undefined, { "x-auth-token": token }), 403);
    expectError(await http("POST", "/l2insertions", insertion(), { "x-auth-token": token }), 403);
  });

  it("the routing service lost: 503 naming it, the rest works, and back unaided", async () => {
    await expectServiceLossAndReturn(fx, "routing", "/l2insertions");
  });
});
