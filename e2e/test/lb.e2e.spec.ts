// End to end for load balancing: Load Balancer (v1), Pool (v1) and Health Monitor (v1) with
// every endpoint served for them, and the rules of docs/api.md (sections in the test names) and
// docs/decisions.md, "Load balancing". Real lb service processes, gateways, Postgres,
// NATS and Redis. The same suite runs against a gateway in front of one lb process and against
// a gateway balancing round-robin over two replicas of it.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChangeSeen, expectError, type HttpResult, httpClient, Stack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = "0badbeef-0000-4000-8000-000000000000";

const stack = new Stack();
let changes: ChangeSeen[] = [];
let single = ""; // gateway -> one lb process
let replicated = ""; // gateway -> two lb processes, round-robin
let replica = ""; // the second process's address

beforeAll(async () => {
  changes = await stack.watchChanges();
  await stack.startServices();
  single = await stack.startGateway();
  replica = await stack.startReplica("lb");
  replicated = await stack.startGateway({ VNM_LB_ADDR: `${stack.addrs.get("lb")},${replica}` });
});

afterAll(async () => {
  await stack.stop();
});

/** The change notifications seen so far for one item, as "<Kind>.<event>". */
const changesOf = (id: string) =>
  changes.filter((c) => c.data["id"] === id).map((c) => c.subject.slice(`${stack.prefix}.lb.`.length));

/** Waits until the notifications of `ids` include `expected` (each "<Kind>.<event>"), then checks them exactly. */
async function expectChanges(expected: Record<string, string[]>): Promise<void> {
  const ok = () => Object.entries(expected).every(([id, want]) => changesOf(id).length >= want.length);
  await waitFor("change notifications", async () => ok(), 5_000);
  for (const [id, want] of Object.entries(expected)) expect(changesOf(id), id).toEqual(want);
}

function endToEnd(gateway: () => string): void {
  const http = httpClient(gateway, "application/json", () => stack.adminToken);
  const gw = gateway;
  const post = (path: string, body: unknown, type: string) => http("POST", path, body, { "content-type": V(type) });
  const newLb = async (body: Record<string, unknown> = {}) => {
    const r = await post("/load_balancers", body, "LoadBalancer-v1");
    expect(r.status).toBe(201);
    return r.json as Record<string, string>;
  };
  const newHm = async (body: Record<string, unknown> = {}) => {
    const r = await post("/health_monitors", { type: "TCP", ...body }, "HealthMonitor-v1");
    expect(r.status).toBe(201);
    return r.json as Record<string, string>;
  };
  const poolBody = (loadBalancerId: string, over: Record<string, unknown> = {}) => ({ loadBalancerId, lbMethod: "ROUND_ROBIN", ...over });
  const newPool = async (loadBalancerId: string, over: Record<string, unknown> = {}) => {
    const r = await post("/pools", poolBody(loadBalancerId, over), "Pool-v1");
    expect(r.status).toBe(201);
    return r.json as Record<string, string>;
  };
  const ids = (r: { json: { id: string }[] }) => r.json.map((x) => x.id);
  /** GET `path` answers a `type` list holding `items` in this order, among others. */
  const expectListed = async (path: string, type: string, items: Record<string, string>[]) => {
    const l = await http("GET", path);
    expect(l.status).toBe(200);
    expect(l.headers.get("content-type")).toBe(V(type));
    expect(l.json.filter((x: { id: string }) => items.some((i) => i.id === x.id))).toEqual(items);
  };
  /** DELETE answers 204 without a body; the item is gone, and a second DELETE is a 404. */
  const expectDeleted = async (uri: string) => {
    const d = await http("DELETE", uri);
    expect(d.status).toBe(204);
    expect(d.text).toBe("");
    expectError(await http("GET", uri), 404);
    expectError(await http("DELETE", uri), 404);
  };
  /** A 201 of `type` whose Location is <collection>/<new id>; returns that id and URI. */
  const expectCreated = (r: HttpResult, type: string, collection: string) => {
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toBe(V(type));
    const id = r.json.id as string;
    expect(id).toMatch(UUID);
    const uri = `${gw()}${collection}/${id}`;
    expect(r.headers.get("location")).toBe(uri);
    return { id, uri };
  };

  describe("root document (api.md: Addresses and links)", () => {
    it("lists the three collections and item templates as absolute URLs", async () => {
      const r = await http("GET", "/");
      expect(r.json).toMatchObject({
        loadBalancers: `${gw()}/load_balancers`,
        loadBalancerTemplate: `${gw()}/load_balancers/{id}`,
        pools: `${gw()}/pools`,
        poolTemplate: `${gw()}/pools/{id}`,
        healthMonitors: `${gw()}/health_monitors`,
        healthMonitorTemplate: `${gw()}/health_monitors/{id}`,
      });
    });
  });

  describe("Load Balancer (v1)", () => {
    it("POST answers 201 with Location and the full representation; router is null while routerId is", async () => {
      const r = await post("/load_balancers", {}, "LoadBalancer-v1");
      const { id, uri } = expectCreated(r, "LoadBalancer-v1", "/load_balancers");
      expect(r.json).toEqual({
        id,
        adminStateUp: true,
        routerId: null,
        uri,
        router: null,
        pools: `${uri}/pools`,
        vips: `${uri}/vips`,
      });
      const g = await http("GET", uri);
      expect(g.status).toBe(200);
      expect(g.headers.get("content-type")).toBe(V("LoadBalancer-v1"));
      expect(g.json).toEqual(r.json);
    });

    it("takes a client id (in lower case) and adminStateUp; routerId is read-only; a duplicate id is a 409", async () => {
      const id = randomUUID();
      const r = await post("/load_balancers", { id: id.toUpperCase(), adminStateUp: false, routerId: randomUUID() }, "LoadBalancer-v1");
      expect(r.status).toBe(201);
      expect(r.json).toMatchObject({ id, adminStateUp: false, routerId: null, router: null });
      const dup = await post("/load_balancers", { id }, "LoadBalancer-v1");
      expectError(dup, 409);
      expect(dup.json.message).toContain(id);
    });

    it("PUT replaces: an omitted adminStateUp returns to true; routerId and a body id are ignored", async () => {
      const lb = await newLb({ adminStateUp: false });
      const r = await http("PUT", lb.uri!, { id: MISSING, routerId: MISSING }, { "content-type": V("LoadBalancer-v1") });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ ...lb, adminStateUp: true });
      const down = await http("PUT", lb.uri!, { adminStateUp: false });
      expect(down.json.adminStateUp).toBe(false);
      expect((await http("GET", lb.uri!)).json.adminStateUp).toBe(false);
      expectError(await http("GET", `/load_balancers/${MISSING}`), 404);
    });

    it("a bad adminStateUp is a 400 naming it; a missing target is a 404 before its body is judged", async () => {
      const lb = await newLb();
      const r = await http("PUT", lb.uri!, { adminStateUp: "sideways" });
      expectError(r, 400);
      expect(r.json.violations).toEqual([{ property: "adminStateUp", message: expect.any(String) }]);
      expectError(await http("PUT", `/load_balancers/${MISSING}`, { adminStateUp: "sideways" }), 404);
      expectError(await http("PUT", `/load_balancers/${MISSING}`, {}), 404);
    });

    it("its pools and vips links answer 200 with lists; under a missing load balancer they are 404", async () => {
      const lb = await newLb();
      const pools = await http("GET", lb.pools!);
      expect(pools.status).toBe(200);
      expect(pools.headers.get("content-type")).toBe(V("collection.Pool-v1"));
      expect(pools.json).toEqual([]);
      const vips = await http("GET", lb.vips!);
      expect(vips.status).toBe(200);
      expect(vips.headers.get("content-type")).toBe(V("collection.VIP-v1"));
      expect(vips.json).toEqual([]);
      for (const p of ["pools", "vips"]) {
        expectError(await http("GET", `/load_balancers/${MISSING}/${p}`), 404);
        expectError(await http("GET", `/load_balancers/not-a-uuid/${p}`), 404);
      }
    });

    it("lists in creation order as collection.LoadBalancer-v1; DELETE is 204, then 404", async () => {
      const a = await newLb();
      const b = await newLb();
      await expectListed("/load_balancers", "collection.LoadBalancer-v1", [a, b]);
      await expectDeleted(a.uri!);
      expect(ids(await http("GET", "/load_balancers"))).not.toContain(a.id);
    });

    it("a path id that is not a UUID is a 404", async () => {
      expectError(await http("GET", "/load_balancers/not-a-uuid"), 404);
      expectError(await http("PUT", "/load_balancers/not-a-uuid", {}), 404);
      expectError(await http("DELETE", "/load_balancers/not-a-uuid"), 404);
    });

    it("the router link of a load balancer names a kind not served here: 404", async () => {
      expectError(await http("GET", `/routers/${MISSING}`), 404);
    });
  });

  describe("Pool (v1)", () => {
    it("POST /pools answers 201 with the full representation: status ACTIVE, protocol TCP, links resolved", async () => {
      const lb = await newLb();
      const r = await post("/pools", poolBody(lb.id!, { status: "INACTIVE" }), "Pool-v1");
      const { id, uri } = expectCreated(r, "Pool-v1", "/pools");
      expect(r.json).toEqual({
        id,
        loadBalancerId: lb.id,
        lbMethod: "ROUND_ROBIN",
        protocol: "TCP",
        adminStateUp: true,
        healthMonitorId: null,
        status: "ACTIVE",
        uri,
        healthMonitor: null,
        loadBalancer: lb.uri,
        poolMembers: `${uri}/pool_members`,
        vips: `${uri}/vips`,
      });
      expect((await http("GET", uri)).json).toEqual(r.json);
      expect((await http("GET", r.json.loadBalancer)).json).toEqual(lb);
      const members = await http("GET", r.json.poolMembers);
      expect(members.status).toBe(200);
      expect(members.headers.get("content-type")).toBe(V("collection.PoolMember-v1"));
      expect(members.json).toEqual([]);
      const vips = await http("GET", r.json.vips);
      expect(vips.status).toBe(200);
      expect(vips.headers.get("content-type")).toBe(V("collection.VIP-v1"));
      expect(vips.json).toEqual([]);
      expect(ids(await http("GET", lb.pools!))).toEqual([id]);
    });

    it("keeps every POST field; the healthMonitor link reads the monitor; a duplicate id is a 409", async () => {
      const lb = await newLb();
      const hm = await newHm();
      const id = randomUUID();
      const p = await newPool(lb.id!, { id, protocol: "TCP", adminStateUp: false, healthMonitorId: hm.id });
      expect(p).toMatchObject({ id, protocol: "TCP", adminStateUp: false, healthMonitorId: hm.id, healthMonitor: hm.uri, status: "ACTIVE" });
      expect((await http("GET", p.healthMonitor!)).json).toEqual(hm);
      const dup = await post("/pools", poolBody(lb.id!, { id }), "Pool-v1");
      expectError(dup, 409);
      expect(dup.json.message).toContain(id);
    });

    const bad: [string, Record<string, unknown>, string, RegExp][] = [
      ["lbMethod other than ROUND_ROBIN", { lbMethod: "LEAST_CONNECTIONS" }, "lbMethod", /ROUND_ROBIN/],
      ["lbMethod in lower case", { lbMethod: "round_robin" }, "lbMethod", /ROUND_ROBIN/],
      ["lbMethod missing", { lbMethod: undefined }, "lbMethod", /null/],
      ["protocol other than TCP", { protocol: "HTTP" }, "protocol", /TCP/],
      ["loadBalancerId missing", { loadBalancerId: undefined }, "loadBalancerId", /null/],
      ["loadBalancerId not a UUID", { loadBalancerId: "lb-1" }, "loadBalancerId", /UUID/],
      ["healthMonitorId not a UUID", { healthMonitorId: "hm-1" }, "healthMonitorId", /UUID/],
      ["adminStateUp not a boolean", { adminStateUp: 3 }, "adminStateUp", /boolean/],
    ];
    for (const [what, over, property, message] of bad) {
      it(`400 naming the field (and the allowed value): ${what}`, async () => {
        const lb = await newLb();
        const body = poolBody(lb.id!, over);
        const r = await post("/pools", body, "Pool-v1");
        expectError(r, 400);
        expect(r.json.violations).toEqual([{ property, message: expect.stringMatching(message) }]);
        const u = await post(`/load_balancers/${lb.id}/pools`, body, "Pool-v1");
        expectError(u, 400);
        expect(u.json.violations).toEqual([{ property, message: expect.stringMatching(message) }]);
        expect((await http("GET", lb.pools!)).json).toEqual([]);
      });
    }

    it("a reference to a missing load balancer or health monitor is a 404 naming the kind and the id (POST)", async () => {
      const lb = await newLb();
      const noLb = await post("/pools", poolBody(MISSING), "Pool-v1");
      expectError(noLb, 404);
      expect(noLb.json.message).toBe(`There is no LoadBalancer with ID ${MISSING}.`);
      const noHm = await post("/pools", poolBody(lb.id!, { healthMonitorId: MISSING }), "Pool-v1");
      expectError(noHm, 404);
      expect(noHm.json.message).toBe(`There is no HealthMonitor with ID ${MISSING}.`);
      const under = await post(`/load_balancers/${lb.id}/pools`, poolBody(lb.id!, { healthMonitorId: MISSING }), "Pool-v1");
      expectError(under, 404);
      expect(under.json.message).toBe(`There is no HealthMonitor with ID ${MISSING}.`);
      expect((await http("GET", lb.pools!)).json).toEqual([]);
    });

    it("a reference to a missing load balancer or health monitor is a 404 naming the kind and the id (PUT), and changes nothing", async () => {
      const lb = await newLb();
      const p = await newPool(lb.id!);
      const noLb = await http("PUT", p.uri!, poolBody(MISSING));
      expectError(noLb, 404);
      expect(noLb.json.message).toBe(`There is no LoadBalancer with ID ${MISSING}.`);
      const noHm = await http("PUT", p.uri!, poolBody(lb.id!, { healthMonitorId: MISSING }));
      expectError(noHm, 404);
      expect(noHm.json.message).toBe(`There is no HealthMonitor with ID ${MISSING}.`);
      expect((await http("GET", p.uri!)).json).toEqual(p);
    });

    it("POST /load_balancers/:id/pools: the path wins over the body's loadBalancerId, which is still required", async () => {
      const lb = await newLb();
      const other = await newLb();
      const r = await post(`/load_balancers/${lb.id}/pools`, poolBody(other.id!), "Pool-v1");
      expect(r.status).toBe(201);
      expect(r.headers.get("location")).toBe(`${gw()}/pools/${r.json.id}`);
      expect(r.json).toMatchObject({ loadBalancerId: lb.id, loadBalancer: lb.uri, status: "ACTIVE", protocol: "TCP" });
      // The body's value is ignored even when it names nothing.
      const s = await post(`/load_balancers/${lb.id}/pools`, poolBody(MISSING), "Pool-v1");
      expect(s.status).toBe(201);
      expect(s.json.loadBalancerId).toBe(lb.id);
      expect(ids(await http("GET", lb.pools!))).toEqual([r.json.id, s.json.id]);
      expect((await http("GET", other.pools!)).json).toEqual([]);
      const without = await post(`/load_balancers/${lb.id}/pools`, { lbMethod: "ROUND_ROBIN" }, "Pool-v1");
      expectError(without, 400);
      expect(without.json.violations).toEqual([{ property: "loadBalancerId", message: expect.any(String) }]);
    });

    it("POST under a missing load balancer is a 404 before its body is judged; a non-UUID one is a 404", async () => {
      for (const body of [poolBody(MISSING), { lbMethod: 7 }, {}]) {
        const r = await post(`/load_balancers/${MISSING}/pools`, body, "Pool-v1");
        expectError(r, 404);
        expect(r.json.message).toContain(MISSING);
      }
      expectError(await post("/load_balancers/not-a-uuid/pools", poolBody(MISSING), "Pool-v1"), 404);
    });

    it("PUT replaces: omitted optional fields return to their defaults; status stays service-owned; a body id is ignored", async () => {
      const lb = await newLb();
      const hm = await newHm();
      const p = await newPool(lb.id!, { adminStateUp: false, healthMonitorId: hm.id });
      const r = await http("PUT", p.uri!, { ...poolBody(lb.id!), id: MISSING, status: "INACTIVE" }, { "content-type": V("Pool-v1") });
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe(V("Pool-v1"));
      expect(r.json).toEqual({ ...p, adminStateUp: true, healthMonitorId: null, healthMonitor: null, status: "ACTIVE" });
      expect((await http("GET", p.uri!)).json).toEqual(r.json);
      expectError(await http("GET", `/pools/${MISSING}`), 404);
      // Round trip: what was read goes back unchanged.
      const again = await http("PUT", p.uri!, r.json);
      expect(again.json).toEqual(r.json);
    });

    it("PUT moves a pool to another load balancer and sets its monitor; the lists follow", async () => {
      const a = await newLb();
      const b = await newLb();
      const hm = await newHm();
      const p = await newPool(a.id!);
      const r = await http("PUT", p.uri!, poolBody(b.id!, { healthMonitorId: hm.id }));
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ loadBalancerId: b.id, loadBalancer: b.uri, healthMonitorId: hm.id, healthMonitor: hm.uri });
      expect((await http("GET", a.pools!)).json).toEqual([]);
      expect(ids(await http("GET", b.pools!))).toEqual([p.id]);
      expect(ids(await http("GET", hm.pools!))).toEqual([p.id]);
    });

    it("PUT rules: a missing pool is a 404 before its body is judged; a bad lbMethod is a 400 and changes nothing", async () => {
      const lb = await newLb();
      const p = await newPool(lb.id!);
      expectError(await http("PUT", `/pools/${MISSING}`, poolBody(lb.id!)), 404);
      expectError(await http("PUT", `/pools/${MISSING}`, { lbMethod: 1 }), 404);
      expectError(await http("PUT", `/pools/${MISSING}`, poolBody(lb.id!, { lbMethod: "RANDOM" })), 404);
      expectError(await http("PUT", "/pools/not-a-uuid", poolBody(lb.id!)), 404);
      const r = await http("PUT", p.uri!, poolBody(lb.id!, { lbMethod: "RANDOM", adminStateUp: false }));
      expectError(r, 400);
      expect(r.json.violations).toEqual([{ property: "lbMethod", message: expect.stringContaining("ROUND_ROBIN") }]);
      const noLb = await http("PUT", p.uri!, { lbMethod: "ROUND_ROBIN" });
      expectError(noLb, 400);
      expect(noLb.json.violations).toEqual([{ property: "loadBalancerId", message: expect.any(String) }]);
      expect((await http("GET", p.uri!)).json).toEqual(p);
    });

    it("GET /pools lists every pool in creation order as collection.Pool-v1; DELETE is 204, then 404", async () => {
      const lb = await newLb();
      const a = await newPool(lb.id!);
      const b = await newPool(lb.id!);
      await expectListed("/pools", "collection.Pool-v1", [a, b]);
      await expectDeleted(a.uri!);
      expectError(await http("DELETE", "/pools/not-a-uuid"), 404);
      expectError(await http("GET", a.poolMembers!), 404);
      expectError(await http("GET", a.vips!), 404);
      expect(ids(await http("GET", lb.pools!))).toEqual([b.id]);
      expect((await http("GET", lb.uri!)).status).toBe(200);
    });
  });

  describe("Health Monitor (v1)", () => {
    it("POST answers 201 with the full representation; delay, maxRetries and timeout default to 0", async () => {
      const r = await post("/health_monitors", { type: "TCP" }, "HealthMonitor-v1");
      const { id, uri } = expectCreated(r, "HealthMonitor-v1", "/health_monitors");
      expect(r.json).toEqual({ id, type: "TCP", adminStateUp: true, delay: 0, maxRetries: 0, timeout: 0, uri, pools: `${uri}/pools` });
      expect((await http("GET", uri)).json).toEqual(r.json);
    });

    it("keeps every POST field (integers as digits too, adminStateUp false); a duplicate id is a 409", async () => {
      const id = randomUUID();
      const hm = await newHm({ id, adminStateUp: false, delay: 5, maxRetries: "3", timeout: 2147483647 });
      expect(hm).toMatchObject({ id, adminStateUp: false, delay: 5, maxRetries: 3, timeout: 2147483647 });
      const dup = await post("/health_monitors", { id, type: "TCP" }, "HealthMonitor-v1");
      expectError(dup, 409);
      expect(dup.json.message).toContain(id);
    });

    const bad: [string, Record<string, unknown>, string, RegExp][] = [
      ["type other than TCP", { type: "HTTP" }, "type", /TCP/],
      ["type missing", { type: undefined }, "type", /null/],
      ["negative delay", { delay: -1 }, "delay", /^must be greater than or equal to 0 and less than or equal to 2147483647$/],
      ["negative maxRetries", { maxRetries: "-2" }, "maxRetries", /^must be greater than or equal to 0 and less than or equal to 2147483647$/],
      ["timeout not an integer", { timeout: 1.5 }, "timeout", /integer/],
      ["timeout beyond 32 bits", { timeout: 2147483648 }, "timeout", /integer between/],
      ["delay not a number", { delay: "soon" }, "delay", /integer/],
    ];
    for (const [what, over, property, message] of bad) {
      it(`400 naming the field: ${what}`, async () => {
        const before = (await http("GET", "/health_monitors")).json.length;
        const r = await post("/health_monitors", { type: "TCP", ...over }, "HealthMonitor-v1");
        expectError(r, 400);
        expect(r.json.violations).toEqual([{ property, message: expect.stringMatching(message) }]);
        expect((await http("GET", "/health_monitors")).json.length).toBe(before);
      });
    }

    it("PUT replaces: omitted fields return to their defaults; a bad type is a 400; a missing monitor is a 404", async () => {
      const hm = await newHm({ delay: 9, maxRetries: 2, timeout: 4, adminStateUp: false });
      const r = await http("PUT", hm.uri!, { type: "TCP", id: MISSING }, { "content-type": V("HealthMonitor-v1") });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ ...hm, delay: 0, maxRetries: 0, timeout: 0, adminStateUp: true });
      const bad = await http("PUT", hm.uri!, { type: "PING", delay: 3 });
      expectError(bad, 400);
      expect(bad.json.violations).toEqual([{ property: "type", message: expect.stringContaining("TCP") }]);
      expect((await http("GET", hm.uri!)).json).toEqual(r.json);
      expectError(await http("PUT", `/health_monitors/${MISSING}`, { type: "TCP" }), 404);
      expectError(await http("PUT", `/health_monitors/${MISSING}`, { type: 5 }), 404);
      expectError(await http("PUT", "/health_monitors/not-a-uuid", { type: "TCP" }), 404);
    });

    it("its pools are listed at /health_monitors/:id/pools (the link) and /healh_monitors/:id/pools (the original's spelling)", async () => {
      const hm = await newHm();
      const lb = await newLb();
      const a = await newPool(lb.id!, { healthMonitorId: hm.id });
      await newPool(lb.id!);
      const b = await newPool(lb.id!, { healthMonitorId: hm.id });
      expect(hm.pools).toBe(`${gw()}/health_monitors/${hm.id}/pools`);
      for (const path of [hm.pools!, `/healh_monitors/${hm.id}/pools`]) {
        const r = await http("GET", path);
        expect(r.status, path).toBe(200);
        expect(r.headers.get("content-type")).toBe(V("collection.Pool-v1"));
        expect(r.json).toEqual([a, b]);
      }
      for (const spelling of ["health_monitors", "healh_monitors"]) {
        expectError(await http("GET", `/${spelling}/${MISSING}/pools`), 404);
        expectError(await http("GET", `/${spelling}/not-a-uuid/pools`), 404);
      }
    });

    it("lists in creation order as collection.HealthMonitor-v1; DELETE is 204, then 404", async () => {
      const a = await newHm();
      const b = await newHm();
      await expectListed("/health_monitors", "collection.HealthMonitor-v1", [a, b]);
      await expectDeleted(a.uri!);
      expectError(await http("GET", a.pools!), 404);
      expectError(await http("DELETE", "/health_monitors/not-a-uuid"), 404);
    });
  });

  describe("cascades, one transaction, announced row by row (api.md: Deletes and cascades)", () => {
    it("deleting a load balancer deletes its pools; NATS carries a Pool deleted per pool", async () => {
      const lb = await newLb();
      const keep = await newLb();
      const hm = await newHm();
      const a = await newPool(lb.id!, { healthMonitorId: hm.id });
      const b = await newPool(lb.id!);
      const other = await newPool(keep.id!, { healthMonitorId: hm.id });
      expect((await http("GET", "/pools")).json.length).toBeGreaterThanOrEqual(3); // fills the cache
      expect(ids(await http("GET", lb.pools!))).toEqual([a.id, b.id]);
      expect((await http("DELETE", lb.uri!)).status).toBe(204);
      for (const p of [a, b]) expectError(await http("GET", p.uri!), 404);
      expectError(await http("GET", lb.pools!), 404);
      const all = ids(await http("GET", "/pools"));
      expect(all).toContain(other.id);
      expect(all).not.toContain(a.id);
      expect(all).not.toContain(b.id);
      expect((await http("GET", hm.pools!)).json).toEqual([other]);
      await expectChanges({
        [a.id!]: ["Pool.created", "Pool.deleted"],
        [b.id!]: ["Pool.created", "Pool.deleted"],
        [lb.id!]: ["LoadBalancer.created", "LoadBalancer.deleted"],
        [other.id!]: ["Pool.created"],
      });
      const deleted = changes.find((c) => c.data["id"] === a.id && c.subject.endsWith(".deleted"))!;
      expect(deleted.data).toMatchObject({ kind: "Pool", path: `/pools/${a.id}`, domain: "lb" });
    });

    it("deleting a health monitor clears healthMonitorId on its pools; NATS carries a Pool updated per pool", async () => {
      const lb = await newLb();
      const hm = await newHm();
      const keep = await newHm();
      const a = await newPool(lb.id!, { healthMonitorId: hm.id });
      const b = await newPool(lb.id!, { healthMonitorId: hm.id });
      const other = await newPool(lb.id!, { healthMonitorId: keep.id });
      expect((await http("GET", lb.pools!)).json.length).toBe(3); // fills the cache
      expect((await http("DELETE", hm.uri!)).status).toBe(204);
      for (const p of [a, b]) {
        const g = await http("GET", p.uri!);
        expect(g.json).toEqual({ ...p, healthMonitorId: null, healthMonitor: null });
      }
      expect((await http("GET", other.uri!)).json).toEqual(other);
      expect((await http("GET", lb.pools!)).json.map((p: { healthMonitorId: string | null }) => p.healthMonitorId)).toEqual([
        null,
        null,
        keep.id,
      ]);
      expectError(await http("GET", `/healh_monitors/${hm.id}/pools`), 404);
      await expectChanges({
        [a.id!]: ["Pool.created", "Pool.updated"],
        [b.id!]: ["Pool.created", "Pool.updated"],
        [hm.id!]: ["HealthMonitor.created", "HealthMonitor.deleted"],
        [other.id!]: ["Pool.created"],
      });
    });

    it("writes racing a delete never leave a pool pointing at a deleted load balancer or monitor", async () => {
      const lb = await newLb();
      const hm = await newHm();
      const racing = Array.from({ length: 8 }, () => post("/pools", poolBody(lb.id!, { healthMonitorId: hm.id }), "Pool-v1"));
      const [results, lbGone, hmGone] = await Promise.all([Promise.all(racing), http("DELETE", lb.uri!), http("DELETE", hm.uri!)]);
      expect(lbGone.status).toBe(204);
      expect(hmGone.status).toBe(204);
      for (const r of results) expect([201, 404]).toContain(r.status);
      const created = results.filter((r) => r.status === 201).map((r) => r.json.id as string);
      const left = (await http("GET", "/pools")).json as { loadBalancerId: string; healthMonitorId: string | null }[];
      expect(left.filter((p) => p.loadBalancerId === lb.id || p.healthMonitorId === hm.id)).toEqual([]);
      for (const id of created) expectError(await http("GET", `/pools/${id}`), 404);
      // Each created pool went with its load balancer, perhaps after losing its monitor first.
      await waitFor("cascade notifications", async () => created.every((id) => changesOf(id).includes("Pool.deleted")), 5_000);
      for (const id of created) {
        expect([["Pool.created", "Pool.deleted"], ["Pool.created", "Pool.updated", "Pool.deleted"]]).toContainEqual(changesOf(id));
      }
    });

    it("every write is announced: created, updated, deleted, each once, with the item's path", async () => {
      const lb = await newLb();
      await http("PUT", lb.uri!, { adminStateUp: false });
      const p = await newPool(lb.id!);
      await http("PUT", p.uri!, poolBody(lb.id!, { adminStateUp: false }));
      await http("DELETE", p.uri!);
      const hm = await newHm();
      await http("PUT", hm.uri!, { type: "TCP", delay: 1 });
      await http("DELETE", hm.uri!);
      await expectChanges({
        [lb.id!]: ["LoadBalancer.created", "LoadBalancer.updated"],
        [p.id!]: ["Pool.created", "Pool.updated", "Pool.deleted"],
        [hm.id!]: ["HealthMonitor.created", "HealthMonitor.updated", "HealthMonitor.deleted"],
      });
      const created = changes.find((c) => c.data["id"] === hm.id)!;
      expect(created.data).toMatchObject({ kind: "HealthMonitor", path: `/health_monitors/${hm.id}`, tenantId: null });
    });
  });

  describe("collection cache and protocol (api.md: Media types and negotiation, Status codes)", () => {
    it("a client reads its own writes through the cached collections", async () => {
      const lb = await newLb();
      const list = () => http("GET", lb.pools!);
      expect((await list()).json).toEqual([]);
      expect((await list()).json).toEqual([]); // now from the cache
      const p = await newPool(lb.id!);
      expect((await list()).json).toEqual([p]);
      const put = await http("PUT", p.uri!, poolBody(lb.id!, { adminStateUp: false }));
      expect((await list()).json).toEqual([put.json]);
      await http("DELETE", p.uri!);
      expect((await list()).json).toEqual([]);
    });

    it("405 with Allow for a method a path does not support; 404 for an unknown one", async () => {
      const lb = await newLb();
      const m = await http("PUT", `/load_balancers/${lb.id}/pools`, {});
      expectError(m, 405);
      expect(m.headers.get("allow")).toBe("GET, POST");
      const h = await http("POST", `/healh_monitors/${MISSING}/pools`, {});
      expectError(h, 405);
      expect(h.headers.get("allow")).toBe("GET");
      const v = await http("POST", `/load_balancers/${lb.id}/vips`, {});
      expectError(v, 405);
      expect(v.headers.get("allow")).toBe("GET");
      expectError(await http("GET", `/load_balancers/${lb.id}/nothing`), 404);
    });

    it("negotiates the media types: 415 for another kind's type, 406 for an item type on a collection", async () => {
      expectError(await post("/pools", poolBody(MISSING), "LoadBalancer-v1"), 415);
      expectError(await post("/health_monitors", { type: "TCP" }, "HealthMonitor-v2"), 415);
      expectError(await http("GET", "/pools", undefined, { accept: V("Pool-v1") }), 406);
      expect((await http("GET", "/pools", undefined, { accept: V("collection.Pool-v1") })).status).toBe(200);
      const lb = await newLb();
      expect((await http("GET", lb.uri!, undefined, { accept: "application/json" })).headers.get("content-type")).toBe(
        "application/json",
      );
      expectError(await http("GET", lb.uri!, undefined, { accept: V("Pool-v1") }), 406);
    });
  });
}

describe("through a gateway in front of one lb process", () => {
  endToEnd(() => single);

  it("load balancing has no tenant field, so it is admin-only (api.md: Tenancy): a tenant admin gets 403", async () => {
    const http = httpClient(() => single, "application/json", () => stack.adminToken);
    const lb = (await http("POST", "/load_balancers", {})).json;
    const name = `lbta-${stack.id}`;
    const password = "tenant-passw0rd";
    expect((await http("POST", "/users", { name, password, tenantId: "acme", roles: ["tenant_admin"] })).status).toBe(201);
    const asTenant = { "x-auth-token": await stack.login(single, name, password) };
    const tries: [string, string, unknown?][] = [
      ["GET", "/load_balancers"],
      ["GET", lb.uri],
      ["POST", "/pools", { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN" }],
      ["GET", `/healh_monitors/${MISSING}/pools`],
      ["DELETE", lb.uri],
    ];
    for (const [method, path, body] of tries) expectError(await http(method, path, body, asTenant), 403);
    expect((await http("GET", lb.uri)).status).toBe(200);
  });

  it("a load balancer's pools filter by a field of theirs in the service (lists below an item too)", async () => {
    const http = httpClient(() => single, "application/json", () => stack.adminToken);
    const lb = (await http("POST", "/load_balancers", {})).json;
    const pool = (up: boolean) => http("POST", "/pools", { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN", adminStateUp: up });
    const on = (await pool(true)).json.id;
    const off = (await pool(false)).json.id;
    const ids = async (q: string) => (await http("GET", `/load_balancers/${lb.id}/pools${q}`)).json.map((p: { id: string }) => p.id);
    expect(await ids("")).toEqual([on, off]);
    expect(await ids("?adminStateUp=false")).toEqual([off]);
    expect(await ids(`?id=${on.toUpperCase()}`)).toEqual([on]);
    expectError(await http("GET", `/load_balancers/${lb.id}/pools?adminStateUp=2`), 400);
  });
});

describe("through a gateway in front of two lb replicas (round-robin)", () => {
  endToEnd(() => replicated);

  describe("replicas", () => {
    const http = httpClient(() => replicated, "application/json", () => stack.adminToken);

    it("a write through one replica is visible at once in a cached collection read, whichever replica answers", async () => {
      const lb = (await http("POST", "/load_balancers", {})).json;
      for (let i = 0; i < 4; i++) {
        const before = (await http("GET", "/pools")).json;
        expect((await http("GET", "/pools")).json).toEqual(before); // from the cache
        const p = await http("POST", "/pools", { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN" });
        expect(p.status).toBe(201);
        expect((await http("GET", "/pools")).json).toEqual([...before, p.json]);
      }
    });

    it("a cached collection carries the links of the gateway asked, not of the one that filled it", async () => {
      const lb = (await http("POST", `${single}/load_balancers`, {})).json;
      const one = await http("GET", `${single}/load_balancers`);
      expect(one.json.at(-1).uri).toBe(`${single}/load_balancers/${lb.id}`);
      const two = await http("GET", `${replicated}/load_balancers`);
      expect(two.json.at(-1)).toEqual({ ...lb, uri: `${replicated}/load_balancers/${lb.id}`, pools: `${replicated}/load_balancers/${lb.id}/pools`, vips: `${replicated}/load_balancers/${lb.id}/vips` });
    });

    it("either replica serves alone: with the first one stopped, the gateway answers through the other", async () => {
      const lb = (await http("POST", "/load_balancers", {})).json;
      await stack.stopService("lb", "SIGKILL");
      const answers = async () => (await http("GET", `/load_balancers/${lb.id}`)).status === 200;
      // Until the channel has seen the first one go, a call may still be routed to it.
      await waitFor("the surviving replica", async () => (await answers()) && (await answers()) && (await answers()), 10_000);
      for (let i = 0; i < 4; i++) {
        const p = await http("POST", "/pools", { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN" });
        expect(p.status).toBe(201);
        expect((await http("GET", `/load_balancers/${lb.id}/pools`)).json.at(-1)).toEqual(p.json);
      }
      // A write must reach the stopped one (a read may come from the cache the gateways share).
      expectError(await http("POST", `${single}/pools`, { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN" }), 503);
      await stack.startServices("lb");
      await waitFor("the first replica back", async () => (await http("GET", `${single}/load_balancers/${lb.id}`)).status === 200, 15_000);
    });
  });
});
