// The /compat family end to end (docs/api.md, "The compat family"): the compat service behind the gateway, real
// Postgres, NATS and Redis. Media types, the compat root, tenancy, every rule with its status
// and the field it names, derived fields in item and cached list reads, and races.
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, useStack, expectServiceLossAndReturn } from "../harness/harness.ts";

const T = (name: string) => `application/vnd.org.service.compat.${name}+json`;
const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
const tokens: Record<string, string> = {};
const as = (who: string) => ({ "x-auth-token": tokens[who]! });
const TENANT = "tenant-a";
let n = 0;
const ip = () => `10.1.${Math.floor(++n / 250)}.${(n % 250) + 1}`;

const post = (path: string, body: unknown, headers: Record<string, string> = {}) => http("POST", path, body, headers);
const pool = async (over: Record<string, unknown> = {}) => (await post("/compat/lb/pools", { tenant_id: TENANT, name: "p", ...over })).json;
const violated = (r: HttpResult) => r.json.violations.map((v: { property: string }) => v.property);

beforeAll(async () => {
  for (const [who, role, tenantId] of [
    ["taA", "tenant_admin", TENANT],
    ["taB", "tenant_admin", "tenant-b"],
  ] as const) {
    const name = `${who}-${fx.stack.id}`;
    expect((await post("/users", { name, password: "compat-password-1", tenantId, roles: [role] })).status).toBe(201);
    tokens[who] = await fx.stack.login(fx.gw, name, "compat-password-1");
  }
});

describe("the family", () => {
  it("has its own root document linked from the main one, with every collection and template", async () => {
    const main = (await http("GET", "/")).json;
    expect(main.compat).toBe(`${fx.gw}/compat`);
    const r = await http("GET", "/compat", undefined, { accept: T("Compat-v1") });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe(T("Compat-v1"));
    expect(r.json.load_balancer).toMatchObject({ pools: `${fx.gw}/compat/lb/pools`, pool_template: `${fx.gw}/compat/lb/pools/{id}`, vips: `${fx.gw}/compat/lb/vips` });
    expect(r.json.security_group_rules).toBe(`${fx.gw}/compat/security_group_rules`);
    // The LB kinds take PUT, hence a merge patch; security group rules take neither.
    for (const kind of ["pool", "member", "vip", "health_monitor"]) expect(r.json.load_balancer[`${kind}_accept_patch`]).toBe("application/merge-patch+json");
    expect(r.json).not.toHaveProperty("security_group_rule_accept_patch");
    expect(main.pools).toBe(`${fx.gw}/pools`); // the v5 pools stay in the main document
  });

  it("speaks snake_case with compat media types and plural collections, no uri; no PUT on security group rules", async () => {
    const p = await post("/compat/lb/pools", { tenant_id: TENANT, lb_method: "ROUND_ROBIN", protocol: "TCP" }, { "content-type": T("lb.Pool-v1") });
    expect(p.status).toBe(201);
    expect(p.headers.get("content-type")).toBe(T("lb.Pool-v1"));
    expect(p.json).toMatchObject({ tenant_id: TENANT, admin_state_up: true, members: [], health_monitors: [], vip_id: null });
    expect(p.json).not.toHaveProperty("uri");
    expect(p.headers.get("location")).toBe(`${fx.gw}/compat/lb/pools/${p.json.id}`);
    const list = await http("GET", "/compat/lb/pools", undefined, { accept: T("lb.Pools-v1") });
    expect(list.headers.get("content-type")).toBe(T("lb.Pools-v1"));
    expect((await http("PUT", `/compat/lb/pools/${p.json.id}`, { tenant_id: TENANT })).status).toBe(200);
    const rule = await post("/compat/security_group_rules", { tenant_id: TENANT, direction: "ingress", security_group_id: "00000000-0000-4000-8000-00000000c0f9" });
    const put = await http("PUT", `/compat/security_group_rules/${rule.json.id}`, { tenant_id: TENANT, direction: "egress" });
    expectError(put, 405);
    expect(put.headers.get("allow")).toBe("GET, DELETE");
    expectError(await post("/compat/lb/pools", { name: "no tenant" }), 400);
  });
});

describe("LB rules", () => {
  it("pools: only ROUND_ROBIN and TCP", async () => {
    for (const [body, property] of [
      [{ lb_method: "LEAST_CONNECTIONS" }, "lb_method"],
      [{ protocol: "HTTP" }, "protocol"],
      [{ status: "UP" }, "status"],
    ] as const) {
      const r = await post("/compat/lb/pools", { tenant_id: TENANT, ...body });
      expectError(r, 400);
      expect(violated(r)).toEqual([property]);
    }
  });

  it("members: the pool must exist (404 naming it); weight in [0, 256] default 1; port in [0, 65535]; unique per pool, address and port", async () => {
    const p = await pool();
    const missing = "00000000-0000-4000-8000-00000000c0f1";
    const r404 = await post("/compat/lb/members", { tenant_id: TENANT, pool_id: missing, address: ip(), protocol_port: 80 });
    expectError(r404, 404);
    expect(r404.json.message).toContain(missing);
    for (const [over, property] of [
      [{ weight: 257 }, "weight"],
      [{ weight: -1 }, "weight"],
      [{ protocol_port: 65536 }, "protocol_port"],
      [{ address: "10.0.0" }, "address"],
    ] as const) {
      const r = await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p.id, address: ip(), protocol_port: 80, ...over });
      expectError(r, 400);
      expect(violated(r)).toEqual([property]);
    }
    const addr = ip();
    const ok = await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p.id, address: addr, protocol_port: 80 });
    expect(ok.json.weight).toBe(1);
    expectError(await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p.id, address: addr, protocol_port: 80 }), 409);
    expect((await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p.id, address: addr, protocol_port: 81 })).status).toBe(201);
  });

  it("VIPs: TCP only (HTTP and HTTPS say so), connection_limit >= -1 default -1, session persistence and its cookie", async () => {
    const p = await pool();
    for (const proto of ["HTTP", "HTTPS"]) {
      const r = await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p.id, protocol: proto });
      expectError(r, 400);
      expect(r.json.violations).toEqual([{ property: "protocol", message: `${proto} is not supported: only TCP is` }]);
    }
    const cases: [Record<string, unknown>, string][] = [
      [{ protocol: "UDP" }, "protocol"],
      [{ connection_limit: -2 }, "connection_limit"],
      [{ protocol_port: 70000 }, "protocol_port"],
      [{ session_persistence: { type: "APP_COOKIE" } }, "session_persistence"],
      [{ session_persistence: { type: "SOURCE_IP", cookie_name: "c" } }, "session_persistence"],
      [{ session_persistence: { type: "HTTP_COOKIE", cookie_name: "c" } }, "session_persistence"],
      [{ session_persistence: { type: "STICKY" } }, "session_persistence"],
    ];
    for (const [over, property] of cases) {
      const r = await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p.id, ...over });
      expectError(r, 400);
      expect(violated(r), JSON.stringify(over)).toEqual([property]);
    }
    const v = await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p.id, protocol: "TCP", session_persistence: { type: "APP_COOKIE", cookie_name: "jar" } });
    expect(v.status).toBe(201);
    expect(v.json).toMatchObject({ connection_limit: -1, session_persistence: { type: "APP_COOKIE", cookie_name: "jar" } });
    expectError(await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p.id }), 409);
    expectError(await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: "00000000-0000-4000-8000-00000000c0f2" }), 404);
  });

  it("health monitors: types, non-negative timings with delay >= timeout, pools that exist", async () => {
    for (const [over, property] of [
      [{ type: "UDP" }, "type"],
      [{ delay: 1, timeout: 5 }, "delay"],
      [{ max_retries: -1 }, "max_retries"],
      [{ timeout: -1 }, "timeout"],
    ] as const) {
      const r = await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP", ...over });
      expectError(r, 400);
      expect(violated(r)).toEqual([property]);
    }
    const missing = "00000000-0000-4000-8000-00000000c0f3";
    expectError(await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "PING", pools: [{ pool_id: missing }] }), 404);
    const p = await pool();
    const hm = await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "HTTP", delay: 5, timeout: 5, pools: [{ pool_id: p.id }] });
    expect(hm.status).toBe(201);
    expect(hm.json.pools).toEqual([{ pool_id: p.id, status: null, status_description: null }]);
    expect((await http("GET", `/compat/lb/pools/${p.id}`)).json.health_monitors).toEqual([hm.json.id]);
  });

  it("deletes: a pool a VIP uses is a 409; its members and associations go with it; an associated monitor is a 409", async () => {
    const p = await pool();
    const hm = (await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP", pools: [{ pool_id: p.id }] })).json;
    const m = (await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p.id, address: ip(), protocol_port: 80 })).json;
    const v = (await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p.id })).json;
    expectError(await http("DELETE", `/compat/lb/pools/${p.id}`), 409);
    expectError(await http("DELETE", `/compat/lb/health_monitors/${hm.id}`), 409);
    expect((await http("DELETE", `/compat/lb/vips/${v.id}`)).status).toBe(204);
    expect((await http("DELETE", `/compat/lb/pools/${p.id}`)).status).toBe(204);
    expectError(await http("GET", `/compat/lb/members/${m.id}`), 404);
    expect((await http("GET", `/compat/lb/health_monitors/${hm.id}`)).json.pools).toEqual([]);
    expect((await http("DELETE", `/compat/lb/health_monitors/${hm.id}`)).status).toBe(204);
  });

  it("pool/health-monitor associations: 201, twice a 409, a missing one a 404 on delete", async () => {
    const p = await pool();
    const hm = (await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP" })).json;
    const a = await post(`/compat/lb/pools/${p.id}/health_monitors`, { id: hm.id, delay: 99 }, { "content-type": T("lb.PoolHealthMonitor-v1") });
    expect(a.status).toBe(201);
    expect(a.json.id).toBe(hm.id);
    expectError(await post(`/compat/lb/pools/${p.id}/health_monitors`, { id: hm.id }), 409);
    expectError(await post(`/compat/lb/pools/${p.id}/health_monitors`, { id: "00000000-0000-4000-8000-00000000c0f4" }), 404);
    expect((await http("DELETE", `/compat/lb/pools/${p.id}/health_monitors/${hm.id}`)).status).toBe(204);
    expectError(await http("DELETE", `/compat/lb/pools/${p.id}/health_monitors/${hm.id}`), 404);
  });
});

const PATCH = { "content-type": "application/merge-patch+json" };
const patch = (path: string, body: unknown, headers: Record<string, string> = {}) => http("PATCH", path, body, { ...PATCH, ...headers });

describe("updates as the networking API has them: PUT replaces the POST/PUT fields, PATCH merges", () => {
  it("pools: PUT replaces the writable fields (left out ones return to their defaults), keeps id and tenant_id, ignores derived ones", async () => {
    const p = await pool({ name: "before", description: "d", provider: "haproxy", lb_method: "ROUND_ROBIN", admin_state_up: true });
    const other = "00000000-0000-4000-8000-00000000c0fa";
    const r = await http("PUT", `/compat/lb/pools/${p.id}`, { id: other, tenant_id: "tenant-b", name: "after", admin_state_up: false, members: [other], vip_id: other }, { "content-type": T("lb.Pool-v1") });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe(T("lb.Pool-v1"));
    expect(r.json).toMatchObject({ id: p.id, tenant_id: TENANT, name: "after", admin_state_up: false, members: [], health_monitors: [], vip_id: null, description: null, provider: null });
    expect((await http("GET", `/compat/lb/pools/${p.id}`)).json).toEqual(r.json);
    // A PUT is judged by the same rules as a POST.
    const bad = await http("PUT", `/compat/lb/pools/${p.id}`, { lb_method: "LEAST_CONNECTIONS" });
    expectError(bad, 400);
    expect(violated(bad)).toEqual(["lb_method"]);
    expectError(await http("PUT", "/compat/lb/pools/00000000-0000-4000-8000-00000000c0fb", { name: "x" }), 404);
  });

  it("PATCH merges into the item (null removes a field); If-Match with a stale tag is a 412 on PUT and PATCH", async () => {
    const p = await pool({ name: "n", description: "d" });
    const got = await http("GET", `/compat/lb/pools/${p.id}`);
    const tag = got.headers.get("etag")!;
    const r = await patch(`/compat/lb/pools/${p.id}`, { description: null, provider: "octavia" }, { "if-match": tag });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ name: "n", provider: "octavia", tenant_id: TENANT, description: null });
    expect(r.headers.get("etag")).not.toBe(tag);
    expectError(await patch(`/compat/lb/pools/${p.id}`, { name: "late" }, { "if-match": tag }), 412);
    expectError(await http("PUT", `/compat/lb/pools/${p.id}`, { name: "late" }, { "if-match": tag }), 412);
    expect((await http("GET", `/compat/lb/pools/${p.id}`)).json.name).toBe("n");
    const now = await http("PUT", `/compat/lb/pools/${p.id}`, { name: "current" }, { "if-match": r.headers.get("etag")! });
    expect(now.status).toBe(200);
    expect(now.json.name).toBe("current");
  });

  it("members: weight, address, port and pool change (both pools' members follow); the rules and the uniqueness hold", async () => {
    const [p1, p2] = [await pool(), await pool()];
    const address = ip();
    const m = (await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p1.id, address, protocol_port: 80, weight: 5 })).json;
    const r = await patch(`/compat/lb/members/${m.id}`, { pool_id: p2.id, protocol_port: 8080, tenant_id: "tenant-b" });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ pool_id: p2.id, address, protocol_port: 8080, weight: 5, tenant_id: TENANT });
    expect((await http("GET", `/compat/lb/pools/${p1.id}`)).json.members).toEqual([]);
    expect((await http("GET", `/compat/lb/pools/${p2.id}`)).json.members).toEqual([m.id]);
    // PUT: weight left out returns to its default 1.
    const put = await http("PUT", `/compat/lb/members/${m.id}`, { pool_id: p2.id, address, protocol_port: 8080 });
    expect(put.json.weight).toBe(1);
    const bad = await patch(`/compat/lb/members/${m.id}`, { weight: 257 });
    expectError(bad, 400);
    expect(violated(bad)).toEqual(["weight"]);
    const missing = "00000000-0000-4000-8000-00000000c0fc";
    expectError(await patch(`/compat/lb/members/${m.id}`, { pool_id: missing }), 404);
    await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p2.id, address, protocol_port: 81 });
    expectError(await patch(`/compat/lb/members/${m.id}`, { protocol_port: 81 }), 409);
  });

  it("VIPs: fields change, session_persistence is replaced or removed (null), a move to a pool with a VIP is a 409", async () => {
    const [p1, p2, p3] = [await pool(), await pool(), await pool()];
    const v = (await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p1.id, protocol: "TCP", protocol_port: 80, session_persistence: { type: "SOURCE_IP" } })).json;
    await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p3.id });
    const r = await patch(`/compat/lb/vips/${v.id}`, { pool_id: p2.id, connection_limit: 100, session_persistence: { type: "APP_COOKIE", cookie_name: "c" } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ pool_id: p2.id, connection_limit: 100, protocol_port: 80, session_persistence: { type: "APP_COOKIE", cookie_name: "c" } });
    expect((await http("GET", `/compat/lb/pools/${p1.id}`)).json.vip_id).toBeNull();
    expect((await http("GET", `/compat/lb/pools/${p2.id}`)).json.vip_id).toBe(v.id);
    const gone = await patch(`/compat/lb/vips/${v.id}`, { session_persistence: null });
    expect(gone.status).toBe(200);
    expect(gone.json).toMatchObject({ session_persistence: null, pool_id: p2.id, connection_limit: 100 });
    const cookie = await patch(`/compat/lb/vips/${v.id}`, { session_persistence: { type: "HTTP_COOKIE", cookie_name: "c" } });
    expectError(cookie, 400);
    expect(cookie.json.violations[0].message).toContain("cookie_name is only for APP_COOKIE");
    expectError(await patch(`/compat/lb/vips/${v.id}`, { protocol: "HTTP" }), 400);
    expectError(await patch(`/compat/lb/vips/${v.id}`, { pool_id: p3.id }), 409);
  });

  it("health monitors: timings change (delay >= timeout holds), type keeps its value, pools replace the associations", async () => {
    const [p1, p2] = [await pool(), await pool()];
    const hm = (await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP", delay: 5, timeout: 5, pools: [{ pool_id: p1.id }] })).json;
    const r = await patch(`/compat/lb/health_monitors/${hm.id}`, { delay: 10, type: "PING", pools: [{ pool_id: p2.id, status: "ACTIVE" }] });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ delay: 10, timeout: 5, type: "TCP", pools: [{ pool_id: p2.id, status: "ACTIVE" }] });
    expect(r.json.pools).toHaveLength(1);
    expect((await http("GET", `/compat/lb/pools/${p1.id}`)).json.health_monitors).toEqual([]);
    expect((await http("GET", `/compat/lb/pools/${p2.id}`)).json.health_monitors).toEqual([hm.id]);
    const bad = await patch(`/compat/lb/health_monitors/${hm.id}`, { timeout: 11 });
    expectError(bad, 400);
    expect(violated(bad)).toEqual(["delay"]);
    expectError(await patch(`/compat/lb/health_monitors/${hm.id}`, { pools: [{ pool_id: "00000000-0000-4000-8000-00000000c0fd" }] }), 404);
    // A PUT without pools leaves it associated with none (PUT replaces); then it may go.
    const put = await http("PUT", `/compat/lb/health_monitors/${hm.id}`, { delay: 1 });
    expect(put.json).toMatchObject({ delay: 1, timeout: 0, type: "TCP", pools: [] });
    expect((await http("DELETE", `/compat/lb/health_monitors/${hm.id}`)).status).toBe(204);
  });

  it("tenancy: a tenant admin changes its own, another tenant's item is a 404", async () => {
    const p = await pool();
    expect((await patch(`/compat/lb/pools/${p.id}`, { name: "mine" }, as("taA"))).status).toBe(200);
    // tenant_id is POST only: naming another tenant neither moves the item there nor is refused.
    const moved = await http("PUT", `/compat/lb/pools/${p.id}`, { tenant_id: "tenant-b", name: "mine" }, as("taA"));
    expect(moved.status).toBe(200);
    expect(moved.json.tenant_id).toBe(TENANT);
    expectError(await http("GET", `/compat/lb/pools/${p.id}`, undefined, as("taB")), 404);
    expectError(await patch(`/compat/lb/pools/${p.id}`, { name: "theirs" }, as("taB")), 404);
    expectError(await http("PUT", `/compat/lb/pools/${p.id}`, { name: "theirs" }, as("taB")), 404);
    expect((await http("GET", `/compat/lb/pools/${p.id}`)).json.name).toBe("mine");
  });
});

describe("the pool/health-monitor association as an item", () => {
  it("its POST answers with a Location where GET reads it; its DELETE honours If-Match", async () => {
    const p = await pool();
    const hm = (await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP" })).json;
    const a = await post(`/compat/lb/pools/${p.id}/health_monitors`, { id: hm.id });
    expect(a.status).toBe(201);
    const at = `${fx.gw}/compat/lb/pools/${p.id}/health_monitors/${hm.id}`;
    expect(a.headers.get("location")).toBe(at);
    const fresh = { id: hm.id, pool_id: p.id, status: null, status_description: null };
    expect(a.json).toEqual(fresh);
    const got = await http("GET", at.slice(fx.gw.length), undefined, { accept: T("lb.PoolHealthMonitor-v1") });
    expect(got.status).toBe(200);
    expect(got.json).toEqual(fresh);
    const list = await http("GET", `/compat/lb/pools/${p.id}/health_monitors`, undefined, { accept: T("lb.PoolHealthMonitors-v1") });
    expect(list.status).toBe(200);
    expect(list.headers.get("content-type")).toBe(T("lb.PoolHealthMonitors-v1"));
    expect(list.json).toEqual([fresh]);
    const tag = got.headers.get("etag")!;
    expect(tag).toBe(a.headers.get("etag"));
    // The association changes (its status, through the monitor's pools): the tag read before is stale.
    expect((await patch(`/compat/lb/health_monitors/${hm.id}`, { pools: [{ pool_id: p.id, status: "INACTIVE" }] })).status).toBe(200);
    const now = await http("GET", at.slice(fx.gw.length));
    expect(now.json).toEqual({ ...fresh, status: "INACTIVE" });
    expect(now.headers.get("etag")).not.toBe(tag);
    const stale = await http("DELETE", at.slice(fx.gw.length), undefined, { "if-match": tag });
    expectError(stale, 412);
    expect(stale.headers.get("etag")).toBe(now.headers.get("etag"));
    expect((await http("GET", `/compat/lb/pools/${p.id}`)).json.health_monitors).toEqual([hm.id]);
    expect((await http("DELETE", at.slice(fx.gw.length), undefined, { "if-match": now.headers.get("etag")! })).status).toBe(204);
    expectError(await http("GET", at.slice(fx.gw.length)), 404);
    expect((await http("GET", `/compat/lb/pools/${p.id}`)).json.health_monitors).toEqual([]);
    expect((await http("GET", `/compat/lb/pools/${p.id}/health_monitors`)).json).toEqual([]);
  });

  it("another tenant's association, or pool's list of them, is a 404 on GET and DELETE", async () => {
    const p = await pool();
    const hm = (await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP", pools: [{ pool_id: p.id }] })).json;
    const at = `/compat/lb/pools/${p.id}/health_monitors/${hm.id}`;
    expectError(await http("GET", at, undefined, as("taB")), 404);
    expectError(await http("DELETE", at, undefined, as("taB")), 404);
    expectError(await http("GET", `/compat/lb/pools/${p.id}/health_monitors`, undefined, as("taB")), 404);
    expect((await http("GET", `/compat/lb/pools/${p.id}/health_monitors`, undefined, as("taA"))).json).toEqual([expect.objectContaining({ id: hm.id, pool_id: p.id })]);
    expect((await http("GET", at, undefined, as("taA"))).status).toBe(200);
  });
});

describe("derived fields tell the truth in item and cached list reads", () => {
  it("a pool's members, health_monitors and vip_id, and a monitor's pools, follow every change", async () => {
    const p = await pool();
    const inList = async () => ((await http("GET", "/compat/lb/pools")).json as { id: string }[]).find((x) => x.id === p.id) as Record<string, unknown>;
    const hmInList = async (id: string) => ((await http("GET", "/compat/lb/health_monitors")).json as { id: string }[]).find((x) => x.id === id) as Record<string, unknown>;
    await inList(); // now cached
    const m = (await post("/compat/lb/members", { tenant_id: TENANT, pool_id: p.id, address: ip(), protocol_port: 80 })).json;
    expect((await http("GET", `/compat/lb/pools/${p.id}`)).json.members).toEqual([m.id]);
    expect((await inList())["members"]).toEqual([m.id]);
    const v = (await post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p.id })).json;
    expect((await inList())["vip_id"]).toBe(v.id);
    const hm = (await post("/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP" })).json;
    await hmInList(hm.id);
    await post(`/compat/lb/pools/${p.id}/health_monitors`, { id: hm.id });
    expect((await inList())["health_monitors"]).toEqual([hm.id]);
    expect((await hmInList(hm.id))["pools"]).toEqual([{ pool_id: p.id, status: null, status_description: null }]);
    await http("DELETE", `/compat/lb/pools/${p.id}/health_monitors/${hm.id}`);
    await http("DELETE", `/compat/lb/members/${m.id}`);
    await http("DELETE", `/compat/lb/vips/${v.id}`);
    expect(await inList()).toMatchObject({ members: [], health_monitors: [], vip_id: null });
    expect((await hmInList(hm.id))["pools"]).toEqual([]);
  });
});

describe("security group rules", () => {
  const SG = "00000000-0000-4000-8000-0000000005a1";
  let g = 0;
  const rule = (over: Record<string, unknown> = {}) => ({ tenant_id: TENANT, direction: "ingress", security_group_id: SG, ...over });
  const fresh = () => `00000000-0000-4000-8000-${String(++g).padStart(12, "0")}`;

  it("normalise: ethertype and protocol names lower case, known numbers as names, prefixes in CIDR form", async () => {
    const r = await post("/compat/security_group_rules", rule({ security_group_id: fresh(), ethertype: "IPv4", protocol: "TCP", port_range_min: 22, port_range_max: 22, remote_ip_prefix: "10.0.0.5/24" }), { "content-type": T("SecurityGroupRule-v1") });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ ethertype: "ipv4", protocol: "tcp", remote_ip_prefix: "10.0.0.0/24", port_range_min: 22 });
    expect((await post("/compat/security_group_rules", rule({ security_group_id: fresh(), protocol: 17 }))).json).toMatchObject({ protocol: "udp", ethertype: "ipv4" });
    expect((await post("/compat/security_group_rules", rule({ security_group_id: fresh(), protocol: "132" }))).json.protocol).toBe("sctp");
    expect((await post("/compat/security_group_rules", rule({ security_group_id: fresh(), protocol: "133" }))).json.protocol).toBe("133");
    expect((await post("/compat/security_group_rules", rule({ security_group_id: fresh(), ethertype: "IPV6", remote_ip_prefix: "2001:DB8::7/64" }))).json.remote_ip_prefix).toBe("2001:db8::/64");
  });

  it("refuse each bad input with 400 naming the field, where Neutron answers 500 too", async () => {
    const cases: [Record<string, unknown> | string, string][] = [
      [rule({ direction: "both" }), "direction"],
      [rule({ direction: undefined }), "direction"],
      [rule({ security_group_id: "sg" }), "security_group_id"],
      [rule({ ethertype: "ipx" }), "ethertype"],
      [rule({ protocol: "06" }), "protocol"],
      [rule({ protocol: 6.5 }), "protocol"],
      [rule({ protocol: true }), "protocol"],
      [rule({ protocol: ["tcp"] }), "protocol"],
      [rule({ protocol: 256 }), "protocol"],
      [rule({ protocol: "gopher" }), "protocol"],
      [rule({ protocol: "gre", port_range_min: 1, port_range_max: 2 }), "port_range_min"],
      [rule({ protocol: "ipv6-frag" }), "protocol"],
      [rule({ remote_ip_prefix: "10.0.0.0/255.0.255.0" }), "remote_ip_prefix"],
      [rule({ port_range_min: 22, port_range_max: 22 }), "port_range_min"],
      [rule({ protocol: "tcp", port_range_min: 0, port_range_max: 22 }), "port_range_min"],
      [rule({ protocol: "udp", port_range_min: 90, port_range_max: 80 }), "port_range_min"],
      [rule({ protocol: "tcp", port_range_min: 1, port_range_max: 65536 }), "port_range_max"],
      [rule({ protocol: "icmp", port_range_min: 256 }), "port_range_min"],
      [rule({ protocol: "icmp", port_range_max: 0 }), "port_range_max"],
      [rule({ protocol: "icmpv6" }), "protocol"],
      [rule({ remote_ip_prefix: "10.0.0.0/33" }), "remote_ip_prefix"],
      [rule({ ethertype: "ipv6", remote_ip_prefix: "10.0.0.0/8" }), "remote_ip_prefix"],
      [rule({ remote_ip_prefix: "10.0.0.0/8", remote_group_id: SG }), "remote_group_id"],
    ];
    for (const [body, property] of cases) {
      const r = await post("/compat/security_group_rules", body);
      expectError(r, 400);
      expect(violated(r), JSON.stringify(body)).toContain(property);
    }
  });

  it("an identical rule in the same group is a 409; 20 parallel identical rules give exactly one 201", async () => {
    const body = rule({ security_group_id: fresh(), protocol: "tcp", port_range_min: 443, port_range_max: 443, remote_ip_prefix: "0.0.0.0/0" });
    expect((await post("/compat/security_group_rules", body)).status).toBe(201);
    expectError(await post("/compat/security_group_rules", { ...body, protocol: 6, remote_ip_prefix: "0.0.0.0/0" }), 409);
    const race = rule({ security_group_id: fresh(), protocol: "udp", port_range_min: 53, port_range_max: 53 });
    const all = await Promise.all(Array.from({ length: 20 }, () => post("/compat/security_group_rules", race)));
    expect(all.filter((r) => r.status === 201)).toHaveLength(1);
    expect(all.filter((r) => r.status === 409)).toHaveLength(19);
  });

  it("rules the networking API treats as the same are one rule (409): no range and the full range, no prefix and the whole space, a name and its number", async () => {
    const same: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ protocol: "tcp" }, { protocol: "tcp", port_range_min: 1, port_range_max: 65535 }],
      [{ protocol: "sctp", port_range_min: 1, port_range_max: 65535 }, { protocol: 132 }],
      [{ protocol: "udp" }, { protocol: "udp", remote_ip_prefix: "0.0.0.0/0" }],
      [{ ethertype: "ipv6", remote_ip_prefix: "::/0" }, { ethertype: "IPv6" }],
      [{ protocol: "gre", remote_ip_prefix: "10.0.0.0/8" }, { protocol: 47, remote_ip_prefix: "10/8" }],
      [{ ethertype: "ipv6", protocol: "icmp" }, { ethertype: "ipv6", protocol: "ipv6-icmp" }],
    ];
    for (const [first, second] of same) {
      const group = fresh();
      const a = await post("/compat/security_group_rules", rule({ security_group_id: group, ...first }));
      expect(a.status, JSON.stringify(first)).toBe(201);
      expectError(await post("/compat/security_group_rules", rule({ security_group_id: group, ...second })), 409);
    }
    // A narrower range is another rule.
    const group = fresh();
    expect((await post("/compat/security_group_rules", rule({ security_group_id: group, protocol: "tcp" }))).status).toBe(201);
    expect((await post("/compat/security_group_rules", rule({ security_group_id: group, protocol: "tcp", port_range_min: 1, port_range_max: 65534 }))).status).toBe(201);
  });

  it("reads the networking API's other protocol names and prefix forms, as they will be stored", async () => {
    const made = async (over: Record<string, unknown>) => (await post("/compat/security_group_rules", rule({ security_group_id: fresh(), ...over }))).json;
    expect(await made({ protocol: "VRRP" })).toMatchObject({ protocol: "vrrp" });
    expect(await made({ protocol: "sctp", port_range_min: 5000, port_range_max: 5010 })).toMatchObject({ protocol: "sctp", port_range_min: 5000, port_range_max: 5010 });
    expect(await made({ ethertype: "ipv6", protocol: "icmp", port_range_min: 128, port_range_max: 0 })).toMatchObject({ protocol: "icmpv6", port_range_min: 128 });
    expect(await made({ remote_ip_prefix: "172.16/12" })).toMatchObject({ remote_ip_prefix: "172.16.0.0/12" });
    expect(await made({ remote_ip_prefix: "192.168.7.9/255.255.255.0" })).toMatchObject({ remote_ip_prefix: "192.168.7.0/24" });
  });

  it("another tenant's identical rule in a group of the same id neither blocks a rule nor shows", async () => {
    const group = fresh();
    const b = await post("/compat/security_group_rules", rule({ tenant_id: "tenant-b", security_group_id: group, direction: "egress", protocol: "udp" }), as("taB"));
    expect(b.status).toBe(201);
    const a = await post("/compat/security_group_rules", rule({ security_group_id: group, direction: "egress", protocol: "udp" }), as("taA"));
    expect(a.status).toBe(201);
    const seen = (await http("GET", "/compat/security_group_rules", undefined, as("taA"))).json.map((r: { id: string }) => r.id);
    expect(seen).toContain(a.json.id);
    expect(seen).not.toContain(b.json.id);
    // Within the tenant the rule stays unique.
    expectError(await post("/compat/security_group_rules", rule({ security_group_id: group, direction: "egress", protocol: 17 }), as("taA")), 409);
  });
});

describe("races on the LB family", () => {
  it("20 parallel identical members give exactly one 201; so do VIPs on one pool", async () => {
    const p = await pool();
    const body = { tenant_id: TENANT, pool_id: p.id, address: ip(), protocol_port: 8080 };
    const members = await Promise.all(Array.from({ length: 20 }, () => post("/compat/lb/members", body)));
    expect(members.filter((r) => r.status === 201)).toHaveLength(1);
    expect(members.filter((r) => r.status === 409)).toHaveLength(19);
    const vips = await Promise.all(Array.from({ length: 20 }, () => post("/compat/lb/vips", { tenant_id: TENANT, pool_id: p.id })));
    expect(vips.filter((r) => r.status === 201)).toHaveLength(1);
    expect(vips.filter((r) => r.status === 409)).toHaveLength(19);
  });
});

describe("tenancy as for bridges", () => {
  it("a tenant admin sees and writes its own tenant's; another tenant's item and references are 404", async () => {
    const mine = await post("/compat/lb/pools", { tenant_id: TENANT }, as("taA"));
    expect(mine.status).toBe(201);
    expectError(await post("/compat/lb/pools", { tenant_id: "tenant-b" }, as("taA")), 403);
    expectError(await http("GET", `/compat/lb/pools/${mine.json.id}`, undefined, as("taB")), 404);
    expectError(await http("DELETE", `/compat/lb/pools/${mine.json.id}`, undefined, as("taB")), 404);
    expectError(await post("/compat/lb/members", { tenant_id: "tenant-b", pool_id: mine.json.id }, as("taB")), 404);
    expectError(await post(`/compat/lb/pools/${mine.json.id}/health_monitors`, { id: mine.json.id }, as("taB")), 404);
    const listB = (await http("GET", "/compat/lb/pools", undefined, as("taB"))).json as { id: string }[];
    expect(listB.map((x) => x.id)).not.toContain(mine.json.id);
    expect((await http("GET", `/compat/lb/pools?tenant_id=${TENANT}`, undefined, as("taB"))).json).toEqual([]);
    const filtered = (await http("GET", `/compat/lb/pools?tenant_id=${TENANT}`)).json as { tenant_id: string }[];
    expect(filtered.length).toBeGreaterThan(0);
    expect(filtered.every((x) => x.tenant_id === TENANT)).toBe(true);
  });
});

describe("the compat service lost", () => {
  it("answers 503 naming it, the rest works, and it comes back unaided", async () => {
    // The compat root is the gateway's: it stays while the service is away.
    await fx.stack.stopService("compat");
    expect((await http("GET", "/compat")).status).toBe(200);
    await expectServiceLossAndReturn(fx, "compat", "/compat/lb/pools");
  });
});
