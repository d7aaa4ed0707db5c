// End to end for pool members (PoolMember-v1) and VIPs (VIP-v1), the policy spec's §6 and §7:
// every rule of their tables (values forced at creation, POST-only fields kept on PUT, a move to
// another pool with its 404 for a member and 400 for a VIP, several VIPs per pool, loadBalancerId
// following the pool), the lists under pools and load balancers, admin-only access, and the
// cascades of a pool's and a load balancer's delete, announced. Real lb service, gateway,
// Postgres, NATS and Redis.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = "0badbeef-0000-4000-8000-000000000000";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
type Item = Record<string, unknown> & { id: string; uri: string };

const created = (r: HttpResult, type: string, collection: string): Item => {
  expect(r.status, r.text).toBe(201);
  expect(r.headers.get("content-type")).toBe(V(type));
  expect(r.json.id).toMatch(UUID);
  expect(r.headers.get("location")).toBe(`${fx.gw}${collection}/${r.json.id}`);
  return r.json as Item;
};
const newLb = async () => created(await http("POST", "/load_balancers", {}), "LoadBalancer-v1", "/load_balancers");
const newPool = async (lb?: Item) => created(await http("POST", "/pools", { loadBalancerId: (lb ?? (await newLb())).id, lbMethod: "ROUND_ROBIN" }), "Pool-v1", "/pools");
const newMember = async (pool: Item, over: Record<string, unknown> = {}) =>
  created(await http("POST", "/pool_members", { poolId: pool.id, address: "10.0.0.1", ...over }), "PoolMember-v1", "/pool_members");
const newVip = async (pool: Item, over: Record<string, unknown> = {}) => created(await http("POST", "/vips", { poolId: pool.id, address: "192.0.2.1", ...over }), "VIP-v1", "/vips");
const ids = (r: HttpResult) => (r.json as Item[]).map((x) => x.id);
const props = (r: HttpResult) => (r.json.violations as { property: string }[]).map((v) => v.property);

/** The change notifications seen for one item, as "<Kind>.<event>". */
const changesOf = (id: string) => fx.events.filter((c) => c.data["id"] === id).map((c) => c.subject.slice(`${fx.stack.prefix}.lb.`.length));
async function expectChanges(expected: Record<string, string[]>): Promise<void> {
  const ok = () => Object.entries(expected).every(([id, want]) => changesOf(id).length >= want.length);
  await waitFor("change notifications", async () => ok(), 5_000);
  for (const [id, want] of Object.entries(expected)) expect(changesOf(id), id).toEqual(want);
}

describe("root document (policy spec §0)", () => {
  it("names the member and VIP collections and templates, absolute", async () => {
    const r = await http("GET", "/");
    expect(r.json).toMatchObject({
      poolMembers: `${fx.gw}/pool_members`,
      poolMemberTemplate: `${fx.gw}/pool_members/{id}`,
      vips: `${fx.gw}/vips`,
      vipTemplate: `${fx.gw}/vips/{id}`,
    });
  });
});

describe("Pool member (§6)", () => {
  it("POST /pool_members: 201 with the representation; adminStateUp true and status ACTIVE whatever is sent", async () => {
    const pool = await newPool();
    const m = await newMember(pool, { adminStateUp: false, status: "INACTIVE" });
    expect(m).toEqual({
      id: m.id,
      poolId: pool.id,
      address: "10.0.0.1",
      protocolPort: 0,
      weight: 1,
      adminStateUp: true,
      status: "ACTIVE",
      uri: `${fx.gw}/pool_members/${m.id}`,
      pool: `${fx.gw}/pools/${pool.id}`,
    });
    const got = await http("GET", m.uri);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe(V("PoolMember-v1"));
    expect(got.json).toEqual(m);
    expect((await http("GET", m["pool"] as string)).json).toEqual(pool);
  });

  it("keeps every POST field; a client id is honoured and a duplicate is a 409", async () => {
    const pool = await newPool();
    const id = randomUUID();
    const m = await newMember(pool, { id, address: "10.1.2.3", protocolPort: 8080, weight: 7 });
    expect(m).toMatchObject({ id, address: "10.1.2.3", protocolPort: 8080, weight: 7 });
    expectError(await http("POST", "/pool_members", { id, poolId: pool.id, address: "10.1.2.3" }), 409);
    // Weight has no upper limit (as the original).
    expect((await newMember(pool, { weight: 100000 }))["weight"]).toBe(100000);
  });

  it("several members may share address and port", async () => {
    const pool = await newPool();
    const a = await newMember(pool, { address: "10.0.0.9", protocolPort: 80 });
    const b = await newMember(pool, { address: "10.0.0.9", protocolPort: 80 });
    expect(ids(await http("GET", `/pools/${pool.id}/pool_members`))).toEqual([a.id, b.id]);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ["no poolId at /pool_members", { address: "10.0.0.1" }, "poolId"],
    ["a poolId that is not a UUID", { poolId: "nope", address: "10.0.0.1" }, "poolId"],
    ["no address", { poolId: "{pool}" }, "address"],
    ["an address that is no IPv4 address", { poolId: "{pool}", address: "10.0.0.256" }, "address"],
    ["weight 0", { poolId: "{pool}", address: "10.0.0.1", weight: 0 }, "weight"],
    ["a negative protocolPort", { poolId: "{pool}", address: "10.0.0.1", protocolPort: -1 }, "protocolPort"],
    ["protocolPort 65536", { poolId: "{pool}", address: "10.0.0.1", protocolPort: 65536 }, "protocolPort"],
    ["a weight that is no integer", { poolId: "{pool}", address: "10.0.0.1", weight: "heavy" }, "weight"],
  ];
  for (const [what, body, property] of bad) {
    it(`400 on ${property}: ${what}; nothing is stored`, async () => {
      const pool = await newPool();
      const sent = { ...body, ...(body["poolId"] === "{pool}" ? { poolId: pool.id } : {}) };
      const r = await http("POST", "/pool_members", sent);
      expectError(r, 400);
      expect(props(r)).toEqual([property]);
      expect((await http("GET", `/pools/${pool.id}/pool_members`)).json).toEqual([]);
    });
  }

  it("an unknown pool is a 404 naming it (POST), and nothing is stored", async () => {
    const before = (await http("GET", "/pool_members")).json.length;
    const r = await http("POST", "/pool_members", { poolId: MISSING, address: "10.0.0.1" });
    expectError(r, 404);
    expect(r.json.message).toContain(MISSING);
    expect(r.json.message).toContain("Pool");
    expect((await http("GET", "/pool_members")).json.length).toBe(before);
  });

  it("POST /pools/{id}/pool_members: the path's pool, whatever the body says; a missing pool is a 404 before the body is judged", async () => {
    const pool = await newPool();
    const other = await newPool();
    const a = created(await http("POST", `/pools/${pool.id}/pool_members`, { address: "10.0.0.2" }), "PoolMember-v1", "/pool_members");
    const b = created(await http("POST", `/pools/${pool.id}/pool_members`, { poolId: other.id, address: "10.0.0.3" }), "PoolMember-v1", "/pool_members");
    expect([a["poolId"], b["poolId"]]).toEqual([pool.id, pool.id]);
    expect(ids(await http("GET", pool["poolMembers"] as string))).toEqual([a.id, b.id]);
    expect((await http("GET", other["poolMembers"] as string)).json).toEqual([]);
    expectError(await http("POST", `/pools/${MISSING}/pool_members`, {}), 404);
    expectError(await http("POST", `/pools/not-a-uuid/pool_members`, { address: "10.0.0.1" }), 404);
    expectError(await http("GET", `/pools/${MISSING}/pool_members`), 404);
    const r = await http("POST", `/pools/${pool.id}/pool_members`, { address: "x" });
    expectError(r, 400);
    expect(props(r)).toEqual(["address"]);
  });

  it("PUT changes weight and adminStateUp; address, protocolPort and status keep their stored values", async () => {
    const pool = await newPool();
    const m = await newMember(pool, { address: "10.0.0.4", protocolPort: 443, weight: 3 });
    const put = await http("PUT", m.uri, { poolId: pool.id, address: "10.9.9.9", protocolPort: 22, weight: 5, adminStateUp: false, status: "INACTIVE" });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({ ...m, weight: 5, adminStateUp: false });
    expect((await http("GET", m.uri)).json).toEqual(put.json);
    // PUT replaces: an omitted weight and adminStateUp return to their defaults.
    const again = await http("PUT", m.uri, { poolId: pool.id, address: "10.0.0.4" });
    expect(again.json).toEqual({ ...m, weight: 1, adminStateUp: true });
  });

  it("PUT: values sent for the kept fields are still checked; a bad weight or a missing member is refused; nothing changes", async () => {
    const pool = await newPool();
    const m = await newMember(pool, { weight: 2 });
    for (const [body, property] of [
      [{ poolId: pool.id, address: "not-an-address" }, "address"],
      [{ poolId: pool.id, address: "10.0.0.1", protocolPort: 70000 }, "protocolPort"],
      [{ poolId: pool.id, address: "10.0.0.1", weight: 0 }, "weight"],
    ] as const) {
      const r = await http("PUT", m.uri, body);
      expectError(r, 400);
      expect(props(r)).toEqual([property]);
    }
    expect((await http("GET", m.uri)).json).toEqual(m);
    expectError(await http("PUT", `/pool_members/${MISSING}`, {}), 404);
  });

  it("PUT moves a member to another pool (the lists follow); an unknown pool is a 404 naming it and changes nothing", async () => {
    const from = await newPool();
    const to = await newPool();
    const m = await newMember(from);
    const moved = await http("PUT", m.uri, { poolId: to.id, address: "10.0.0.1" });
    expect(moved.status).toBe(200);
    expect(moved.json).toMatchObject({ poolId: to.id, pool: `${fx.gw}/pools/${to.id}` });
    expect((await http("GET", `/pools/${from.id}/pool_members`)).json).toEqual([]);
    expect(ids(await http("GET", `/pools/${to.id}/pool_members`))).toEqual([m.id]);
    const r = await http("PUT", m.uri, { poolId: MISSING, address: "10.0.0.1" });
    expectError(r, 404);
    expect(r.json.message).toContain(MISSING);
    expect((await http("GET", m.uri)).json).toEqual(moved.json);
  });

  it("GET /pool_members lists in creation order as collection.PoolMember-v1 and pages; DELETE is 204, then 404", async () => {
    const pool = await newPool();
    const a = await newMember(pool);
    const b = await newMember(pool);
    const all = await http("GET", "/pool_members");
    expect(all.headers.get("content-type")).toBe(V("collection.PoolMember-v1"));
    expect(ids(all).filter((id) => id === a.id || id === b.id)).toEqual([a.id, b.id]);
    const page = await http("GET", `/pool_members?limit=1&marker=${a.id}`);
    expect(ids(page)).toHaveLength(1);
    expect(ids(page)[0]).toBe(b.id);
    const d = await http("DELETE", a.uri);
    expect(d.status).toBe(204);
    expect(d.text).toBe("");
    expectError(await http("GET", a.uri), 404);
    expectError(await http("DELETE", a.uri), 404);
    expectError(await http("DELETE", `/pool_members/${MISSING}`), 404);
    expect(ids(await http("GET", `/pools/${pool.id}/pool_members`))).toEqual([b.id]);
  });
});

describe("VIP (§7)", () => {
  it("POST /vips: 201 with the representation; loadBalancerId is its pool's, links resolved, defaults", async () => {
    const lb = await newLb();
    const pool = await newPool(lb);
    const v = await newVip(pool, { loadBalancerId: MISSING });
    expect(v).toEqual({
      id: v.id,
      poolId: pool.id,
      loadBalancerId: lb.id,
      address: "192.0.2.1",
      protocolPort: 0,
      sessionPersistence: null,
      adminStateUp: true,
      uri: `${fx.gw}/vips/${v.id}`,
      pool: `${fx.gw}/pools/${pool.id}`,
      loadBalancer: `${fx.gw}/load_balancers/${lb.id}`,
    });
    const got = await http("GET", v.uri);
    expect(got.headers.get("content-type")).toBe(V("VIP-v1"));
    expect(got.json).toEqual(v);
    expect((await http("GET", v["loadBalancer"] as string)).json).toEqual(lb);
  });

  it("keeps every POST field; a client id is honoured, a duplicate is a 409; several VIPs share a pool", async () => {
    const pool = await newPool();
    const id = randomUUID();
    const a = await newVip(pool, { id, address: "192.0.2.7", protocolPort: 443, sessionPersistence: "SOURCE_IP", adminStateUp: false });
    expect(a).toMatchObject({ id, address: "192.0.2.7", protocolPort: 443, sessionPersistence: "SOURCE_IP", adminStateUp: false });
    expectError(await http("POST", "/vips", { id, poolId: pool.id, address: "192.0.2.7" }), 409);
    const b = await newVip(pool, { address: "192.0.2.7", protocolPort: 443 });
    expect(ids(await http("GET", pool["vips"] as string))).toEqual([id, b.id]);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ["no poolId at /vips", { address: "192.0.2.1" }, "poolId"],
    ["no address", { poolId: "{pool}" }, "address"],
    ["an address that is no IPv4 address", { poolId: "{pool}", address: "2001:db8::1" }, "address"],
    ["protocolPort 65536", { poolId: "{pool}", address: "192.0.2.1", protocolPort: 65536 }, "protocolPort"],
    ["a sessionPersistence other than SOURCE_IP", { poolId: "{pool}", address: "192.0.2.1", sessionPersistence: "HTTP_COOKIE" }, "sessionPersistence"],
    ["an adminStateUp that is no boolean", { poolId: "{pool}", address: "192.0.2.1", adminStateUp: "yes" }, "adminStateUp"],
  ];
  for (const [what, body, property] of bad) {
    it(`400 on ${property}: ${what}; nothing is stored`, async () => {
      const pool = await newPool();
      const sent = { ...body, ...(body["poolId"] === "{pool}" ? { poolId: pool.id } : {}) };
      const r = await http("POST", "/vips", sent);
      expectError(r, 400);
      expect(props(r)).toEqual([property]);
      expect((await http("GET", `/pools/${pool.id}/vips`)).json).toEqual([]);
    });
  }

  it("an unknown pool is a 400 whose message names it (as the original), POST and PUT, and nothing changes", async () => {
    const before = (await http("GET", "/vips")).json.length;
    const r = await http("POST", "/vips", { poolId: MISSING, address: "192.0.2.1" });
    expectError(r, 400);
    expect(r.json.message).toContain(MISSING);
    expect(props(r)).toEqual(["poolId"]);
    expect((await http("GET", "/vips")).json.length).toBe(before);
    const v = await newVip(await newPool());
    const p = await http("PUT", v.uri, { poolId: MISSING, address: "192.0.2.1" });
    expectError(p, 400);
    expect(p.json.message).toContain(MISSING);
    expect((await http("GET", v.uri)).json).toEqual(v);
  });

  it("POST /pools/{id}/vips: the path's pool wins; a missing pool is a 404 (the path's parent)", async () => {
    const pool = await newPool();
    const other = await newPool();
    const v = created(await http("POST", `/pools/${pool.id}/vips`, { poolId: other.id, address: "192.0.2.2" }), "VIP-v1", "/vips");
    expect(v["poolId"]).toBe(pool.id);
    expect(ids(await http("GET", `/pools/${pool.id}/vips`))).toEqual([v.id]);
    expectError(await http("POST", `/pools/${MISSING}/vips`, {}), 404);
    expectError(await http("GET", `/pools/${MISSING}/vips`), 404);
  });

  it("PUT changes address, protocolPort, sessionPersistence, adminStateUp and moves it to another pool: loadBalancerId follows", async () => {
    const lb1 = await newLb();
    const lb2 = await newLb();
    const from = await newPool(lb1);
    const to = await newPool(lb2);
    const v = await newVip(from, { sessionPersistence: "SOURCE_IP", protocolPort: 80 });
    const put = await http("PUT", v.uri, { poolId: to.id, address: "198.51.100.1", protocolPort: 8443, adminStateUp: false, loadBalancerId: lb1.id });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({
      ...v,
      poolId: to.id,
      loadBalancerId: lb2.id,
      address: "198.51.100.1",
      protocolPort: 8443,
      sessionPersistence: null,
      adminStateUp: false,
      pool: `${fx.gw}/pools/${to.id}`,
      loadBalancer: `${fx.gw}/load_balancers/${lb2.id}`,
    });
    expect((await http("GET", `/load_balancers/${lb1.id}/vips`)).json).toEqual([]);
    expect(ids(await http("GET", `/load_balancers/${lb2.id}/vips`))).toEqual([v.id]);
    const r = await http("PUT", v.uri, { poolId: to.id });
    expectError(r, 400);
    expect(props(r)).toEqual(["address"]);
    expectError(await http("PUT", `/vips/${MISSING}`, {}), 404);
  });

  it("GET /load_balancers/{id}/vips lists the VIPs of all its pools; POST there is a 405 with Allow", async () => {
    const lb = await newLb();
    const p1 = await newPool(lb);
    const p2 = await newPool(lb);
    const a = await newVip(p1);
    const b = await newVip(p2);
    await newVip(await newPool());
    const l = await http("GET", lb["vips"] as string);
    expect(l.headers.get("content-type")).toBe(V("collection.VIP-v1"));
    expect(ids(l)).toEqual([a.id, b.id]);
    const m = await http("POST", `/load_balancers/${lb.id}/vips`, { poolId: p1.id, address: "192.0.2.1" });
    expectError(m, 405);
    expect(m.headers.get("allow")).toBe("GET");
    expectError(await http("GET", `/load_balancers/${MISSING}/vips`), 404);
  });

  it("a pool moved to another load balancer takes its VIPs along: their loadBalancerId follows, announced", async () => {
    const lb1 = await newLb();
    const lb2 = await newLb();
    const pool = await newPool(lb1);
    const v = await newVip(pool);
    expect(ids(await http("GET", `/load_balancers/${lb1.id}/vips`))).toEqual([v.id]); // fills the cache
    expect((await http("GET", v.uri)).json["loadBalancerId"]).toBe(lb1.id);
    expect((await http("PUT", pool.uri, { loadBalancerId: lb2.id, lbMethod: "ROUND_ROBIN" })).status).toBe(200);
    expect((await http("GET", v.uri)).json).toMatchObject({ loadBalancerId: lb2.id, loadBalancer: `${fx.gw}/load_balancers/${lb2.id}` });
    expect((await http("GET", `/load_balancers/${lb1.id}/vips`)).json).toEqual([]);
    expect(ids(await http("GET", `/load_balancers/${lb2.id}/vips`))).toEqual([v.id]);
    await expectChanges({ [v.id]: ["Vip.created", "Vip.updated"] });
  });

  it("GET /vips lists in creation order as collection.VIP-v1; DELETE is 204, then 404", async () => {
    const pool = await newPool();
    const a = await newVip(pool);
    const b = await newVip(pool);
    const all = await http("GET", "/vips");
    expect(all.headers.get("content-type")).toBe(V("collection.VIP-v1"));
    expect(ids(all).filter((id) => id === a.id || id === b.id)).toEqual([a.id, b.id]);
    expect((await http("DELETE", a.uri)).status).toBe(204);
    expectError(await http("GET", a.uri), 404);
    expectError(await http("DELETE", a.uri), 404);
    expect(ids(await http("GET", `/pools/${pool.id}/vips`))).toEqual([b.id]);
  });
});

describe("cascades, announced (§7: deleting a pool deletes its members and VIPs)", () => {
  it("deleting a pool deletes its members and VIPs, each announced; another pool's stay", async () => {
    const lb = await newLb();
    const pool = await newPool(lb);
    const keep = await newPool(lb);
    const m = await newMember(pool);
    const v = await newVip(pool);
    const km = await newMember(keep);
    const kv = await newVip(keep);
    expect(ids(await http("GET", "/pool_members"))).toContain(m.id); // fills the caches
    expect(ids(await http("GET", `/load_balancers/${lb.id}/vips`))).toEqual([v.id, kv.id]);
    expect((await http("DELETE", pool.uri)).status).toBe(204);
    expectError(await http("GET", m.uri), 404);
    expectError(await http("GET", v.uri), 404);
    expect(ids(await http("GET", "/pool_members"))).not.toContain(m.id);
    expect(ids(await http("GET", `/load_balancers/${lb.id}/vips`))).toEqual([kv.id]);
    expect((await http("GET", km.uri)).status).toBe(200);
    await expectChanges({
      [m.id]: ["PoolMember.created", "PoolMember.deleted"],
      [v.id]: ["Vip.created", "Vip.deleted"],
      [pool.id]: ["Pool.created", "Pool.deleted"],
      [km.id]: ["PoolMember.created"],
    });
    const gone = fx.events.find((c) => c.data["id"] === m.id && c.subject.endsWith(".deleted"))!;
    expect(gone.data).toMatchObject({ kind: "PoolMember", path: `/pool_members/${m.id}` });
  });

  it("deleting a load balancer deletes its pools and so their members and VIPs, each announced", async () => {
    const lb = await newLb();
    const p1 = await newPool(lb);
    const p2 = await newPool(lb);
    const m1 = await newMember(p1);
    const m2 = await newMember(p2);
    const v1 = await newVip(p1);
    const v2 = await newVip(p2);
    expect((await http("DELETE", lb.uri)).status).toBe(204);
    for (const x of [p1, p2, m1, m2, v1, v2]) expectError(await http("GET", x.uri), 404);
    await expectChanges({
      [m1.id]: ["PoolMember.created", "PoolMember.deleted"],
      [m2.id]: ["PoolMember.created", "PoolMember.deleted"],
      [v1.id]: ["Vip.created", "Vip.deleted"],
      [v2.id]: ["Vip.created", "Vip.deleted"],
      [p1.id]: ["Pool.created", "Pool.deleted"],
      [lb.id]: ["LoadBalancer.created", "LoadBalancer.deleted"],
    });
  });
});

describe("admin only (§6, §7)", () => {
  it("a tenant admin gets 403 for every method on members and VIPs", async () => {
    const name = `lbmv-${fx.stack.id}`;
    const password = "tenant-passw0rd";
    expect((await http("POST", "/users", { name, password, tenantId: "acme", roles: ["tenant_admin"] })).status).toBe(201);
    const asTenant = { "x-auth-token": await fx.stack.login(fx.gw, name, password) };
    const lb = await newLb();
    const pool = await newPool(lb);
    const m = await newMember(pool);
    const v = await newVip(pool);
    const tries: [string, string, unknown?][] = [
      ["GET", "/pool_members"],
      ["POST", "/pool_members", { poolId: pool.id, address: "10.0.0.1" }],
      ["GET", m.uri],
      ["PUT", m.uri, { poolId: pool.id, address: "10.0.0.1" }],
      ["DELETE", m.uri],
      ["GET", `/pools/${pool.id}/pool_members`],
      ["POST", `/pools/${pool.id}/pool_members`, { address: "10.0.0.1" }],
      ["GET", "/vips"],
      ["POST", "/vips", { poolId: pool.id, address: "192.0.2.1" }],
      ["GET", v.uri],
      ["PUT", v.uri, { poolId: pool.id, address: "192.0.2.1" }],
      ["DELETE", v.uri],
      ["GET", `/pools/${pool.id}/vips`],
      ["POST", `/pools/${pool.id}/vips`, { address: "192.0.2.1" }],
      ["GET", `/load_balancers/${lb.id}/vips`],
    ];
    for (const [method, path, body] of tries) expectError(await http(method, path, body, asTenant), 403);
    expect((await http("GET", m.uri)).json).toEqual(m);
    expect((await http("GET", v.uri)).json).toEqual(v);
  });
});
