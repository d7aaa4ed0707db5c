// Quotas per tenant and kind (docs/api.md, "Quotas"), through two gateways and two bridge
// service replicas: the 409 and its body, exactly the limit made by 50 concurrent creates,
// usage exact through deletes and cascades, who may read and change a tenant's quotas, the list
// of tenants with overrides, DELETE back to the defaults, and a limit lowered below usage.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, Stack } from "../harness/harness.ts";

const QUOTA_TYPE = "application/vnd.org.service.Quota-v1+json";
// The deployment's defaults: 3 chains a tenant, everything else unlimited.
const stack = new Stack({ VNM_QUOTA_DEFAULTS: JSON.stringify({ chains: 3 }) });
let gw1 = "";
let gw2 = "";
const http = httpClient(() => gw1, "application/json", () => stack.adminToken);
const PASSWORD = "long enough pass phrase 42";
const tenant = (name: string) => `${name}-${stack.id}`;
let userToken = "";
let tenantAdminToken = "";

beforeAll(async () => {
  await stack.startServices("identity", "bridge", "routing", "policy", "qos", "compat", "quota");
  // A second bridge service process; each gateway sends its calls to either.
  const replica = await stack.startReplica("bridge");
  const bridges = { VNM_BRIDGE_ADDR: `${stack.addrs.get("bridge")},${replica}` };
  gw1 = await stack.startGateway(bridges, false);
  gw2 = await stack.startGateway(bridges, false);
  for (const [name, role] of [
    [`reader-${stack.id}`, "tenant_user"],
    [`owner-${stack.id}`, "tenant_admin"],
  ] as const) {
    const u = await http("POST", "/users", { name, password: PASSWORD, tenantId: tenant("T"), roles: [role] });
    expect(u.status, u.text).toBe(201);
  }
  userToken = await stack.login(gw1, `reader-${stack.id}`, PASSWORD);
  tenantAdminToken = await stack.login(gw1, `owner-${stack.id}`, PASSWORD);
}, 120_000);

afterAll(async () => {
  await stack.stop();
});

const quotaOf = async (t: string, headers: Record<string, string> = {}) => {
  const r = await http("GET", `/quotas/${t}`, undefined, headers);
  expect(r.status, r.text).toBe(200);
  return r.json as { tenantId: string; limits: Record<string, number>; used: Record<string, number>; uri: string };
};

const setLimits = async (t: string, limits: Record<string, number>) => {
  const r = await http("PUT", `/quotas/${t}`, { limits });
  expect(r.status, r.text).toBe(200);
  return r.json as { limits: Record<string, number> };
};

const bridge = (t: string, base = gw1) => http("POST", `${base}/bridges`, { name: "b", tenantId: t });

describe("quotas", () => {
  it("GET answers every collection a tenant creates, its limit (the defaults) and its usage", async () => {
    const r = await http("GET", `/quotas/${tenant("fresh")}`);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("content-type")).toContain(QUOTA_TYPE);
    const q = r.json as { tenantId: string; limits: Record<string, number>; used: Record<string, number> };
    expect(q.tenantId).toBe(tenant("fresh"));
    for (const c of ["bridges", "routers", "chains", "portGroups", "qosPolicies", "load_balancer.pools", "load_balancer.members", "security_group_rules"]) {
      expect(q.used[c], c).toBe(0);
      expect(q.limits[c], c).toBe(c === "chains" ? 3 : -1);
    }
    expect(Object.keys(q.limits).sort()).toEqual(Object.keys(q.used).sort());
    // A chain's rules and a router's ports follow their parent: no quota of their own.
    expect(q.limits["rules"]).toBeUndefined();
    expect(q.limits["ports"]).toBeUndefined();
  });

  it("a create past the limit is a 409 naming the collection, the limit and the usage", async () => {
    const t = tenant("full");
    const set = await setLimits(t, { bridges: 2 });
    expect(set.limits["bridges"]).toBe(2);
    expect(set.limits["chains"]).toBe(3);
    for (let i = 0; i < 2; i++) expect((await bridge(t)).status).toBe(201);
    const refused = await bridge(t);
    expectError(refused, 409);
    expect(refused.json.message).toContain("bridges");
    expect(refused.json.violations).toEqual([{ property: "bridges", message: "limit 2, used 2" }]);
    // The defaults limit too: a fourth chain is refused.
    for (let i = 0; i < 3; i++) expect((await http("POST", "/chains", { name: `c${i}`, tenantId: t })).status).toBe(201);
    const chain = await http("POST", "/chains", { name: "c3", tenantId: t });
    expectError(chain, 409);
    expect(chain.json.violations).toEqual([{ property: "chains", message: "limit 3, used 3" }]);
    // Another tenant is not concerned; but its bridge given to the full tenant would be one too many.
    const other = await bridge(tenant("other"));
    expect(other.status).toBe(201);
    const moved = await http("PUT", `/bridges/${other.json.id}`, { name: "b", tenantId: t });
    expectError(moved, 409);
    expect(moved.json.violations).toEqual([{ property: "bridges", message: "limit 2, used 2" }]);
    // A PUT that keeps the bridge's tenant is no create.
    const kept = await http("PUT", `/bridges/${other.json.id}`, { name: "renamed", tenantId: tenant("other") });
    expect(kept.status, kept.text).toBe(200);
    const q = await quotaOf(t);
    expect(q.used["bridges"]).toBe(2);
    expect(q.used["chains"]).toBe(3);
  });

  it("every counted collection is enforced: with each limit 0, each kind's create is a 409 naming its collection", async () => {
    const t = tenant("zero");
    const pool = await http("POST", "/compat/lb/pools", { tenant_id: t, lb_method: "ROUND_ROBIN", protocol: "TCP" });
    expect(pool.status, pool.text).toBe(201);
    const q = await quotaOf(t);
    await setLimits(t, Object.fromEntries(Object.keys(q.limits).map((c) => [c, 0])));
    const creates: Record<string, [string, Record<string, unknown>]> = {
      bridges: ["/bridges", { name: "z", tenantId: t }],
      routers: ["/routers", { name: "z", tenantId: t }],
      chains: ["/chains", { name: "z", tenantId: t }],
      portGroups: ["/port_groups", { name: "z", tenantId: t }],
      qosPolicies: ["/qos_policies", { name: "z", tenantId: t }],
      "load_balancer.pools": ["/compat/lb/pools", { tenant_id: t, lb_method: "ROUND_ROBIN", protocol: "TCP" }],
      "load_balancer.members": ["/compat/lb/members", { tenant_id: t, pool_id: pool.json.id, address: "10.0.0.9", protocol_port: 80 }],
      "load_balancer.vips": ["/compat/lb/vips", { tenant_id: t, pool_id: pool.json.id, protocol: "TCP" }],
      "load_balancer.health_monitors": ["/compat/lb/health_monitors", { tenant_id: t, type: "TCP" }],
      security_group_rules: ["/compat/security_group_rules", { tenant_id: t, direction: "ingress", security_group_id: "00000000-0000-4000-8000-00000000c0f9" }],
    };
    expect(Object.keys(creates).sort()).toEqual(Object.keys(q.limits).sort());
    for (const [collection, [path, body]] of Object.entries(creates)) {
      const r = await http("POST", path, body);
      expect(r.status, `${collection}: ${r.text}`).toBe(409);
      const used = collection === "load_balancer.pools" ? 1 : 0;
      expect(r.json.violations, collection).toEqual([{ property: collection, message: `limit 0, used ${used}` }]);
    }
  });

  it("50 concurrent creates over two gateways and two service processes make exactly the limit", async () => {
    const t = tenant("race");
    await setLimits(t, { bridges: 5 });
    // A create the gateway's fair share turns away (429, on a loaded machine) is sent again, as a client would.
    const create = async (base: string): Promise<HttpResult> => {
      for (;;) {
        const r = await bridge(t, base);
        if (r.status !== 429) return r;
        await new Promise((res) => setTimeout(res, 1000 * Number(r.headers.get("retry-after") ?? 1)));
      }
    };
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => create(i % 2 === 0 ? gw1 : gw2)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 409)).toHaveLength(45);
    const listed = await http("GET", `/bridges?tenant_id=${t}`);
    expect((listed.json as unknown[]).length).toBe(5);
    expect((await quotaOf(t)).used["bridges"]).toBe(5);
  });

  it("usage stays exact through deletes, cascades and failed writes", async () => {
    const t = tenant("cascade");
    const MEMBERS = "load_balancer.members";
    await setLimits(t, { [MEMBERS]: 2, bridges: 1 });
    const pool = await http("POST", "/compat/lb/pools", { tenant_id: t, lb_method: "ROUND_ROBIN", protocol: "TCP" });
    expect(pool.status, pool.text).toBe(201);
    let port = 80;
    const member = (poolId: string) => http("POST", "/compat/lb/members", { tenant_id: t, pool_id: poolId, address: "10.0.0.1", protocol_port: port++ });
    for (let i = 0; i < 2; i++) expect((await member(pool.json.id)).status).toBe(201);
    const refused = await member(pool.json.id);
    expectError(refused, 409);
    expect(refused.json.violations).toEqual([{ property: MEMBERS, message: "limit 2, used 2" }]);
    // A write that fails for another reason counts nothing.
    expectError(await http("POST", "/compat/lb/members", { tenant_id: t, pool_id: pool.json.id, address: "no address", protocol_port: 1 }), 400);
    expect((await quotaOf(t)).used[MEMBERS]).toBe(2);
    // The pool's delete takes its members: the tenant holds none, and 2 may be made again.
    expect((await http("DELETE", `/compat/lb/pools/${pool.json.id}`)).status).toBe(204);
    const after = await quotaOf(t);
    expect(after.used[MEMBERS]).toBe(0);
    expect(after.used["load_balancer.pools"]).toBe(0);
    const again = await http("POST", "/compat/lb/pools", { tenant_id: t, lb_method: "ROUND_ROBIN", protocol: "TCP" });
    for (let i = 0; i < 2; i++) expect((await member(again.json.id)).status).toBe(201);
    expectError(await member(again.json.id), 409);
    // A bridge deleted frees its place.
    const b = await bridge(t);
    expect(b.status).toBe(201);
    expectError(await bridge(t), 409);
    expect((await http("DELETE", `/bridges/${b.json.id}`)).status).toBe(204);
    expect((await quotaOf(t)).used["bridges"]).toBe(0);
    expect((await bridge(t)).status).toBe(201);
  });

  it("a tenant's users read their quotas but cannot change them; another tenant's are a 404", async () => {
    const own = tenant("T");
    await setLimits(own, { routers: 4 });
    // A tenant user's write is refused before anything is read (403, as for every kind); a
    // tenant administrator's write of another tenant's quotas finds none (404).
    for (const [token, othersWrite] of [
      [userToken, 403],
      [tenantAdminToken, 404],
    ] as const) {
      const as = { "x-auth-token": token };
      const q = await quotaOf(own, as);
      expect(q.limits["routers"]).toBe(4);
      expectError(await http("PUT", `/quotas/${own}`, { limits: { routers: 100 } }, as), 403);
      expectError(await http("DELETE", `/quotas/${own}`, undefined, as), 403);
      const other = await http("GET", `/quotas/${tenant("full")}`, undefined, as);
      expectError(other, 404);
      expectError(await http("PUT", `/quotas/${tenant("full")}`, { limits: { bridges: 100 } }, as), othersWrite);
      expectError(await http("DELETE", `/quotas/${tenant("full")}`, undefined, as), othersWrite);
      // Their list holds their own tenant only.
      const listed = await http("GET", "/quotas", undefined, as);
      expect(listed.status, listed.text).toBe(200);
      expect((listed.json as { tenantId: string }[]).map((q) => q.tenantId)).toEqual([own]);
    }
    expect((await quotaOf(own)).limits["routers"]).toBe(4);
  });

  it("a PUT changes only the limits it names and refuses unknown collections and bad values", async () => {
    const t = tenant("partial");
    await setLimits(t, { routers: 2, bridges: 7 });
    const r = await setLimits(t, { routers: 9 });
    expect(r.limits["routers"]).toBe(9);
    expect(r.limits["bridges"]).toBe(7);
    // A merge patch does the same.
    const patched = await http("PATCH", `/quotas/${t}`, { limits: { routers: 3 } }, { "content-type": "application/merge-patch+json" });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json.limits).toMatchObject({ routers: 3, bridges: 7 });
    const bad = await http("PUT", `/quotas/${t}`, { limits: { widgets: 1, bridges: -2, routers: 1.5 } });
    expectError(bad, 400);
    expect((bad.json.violations as { property: string }[]).map((v) => v.property).sort()).toEqual(["limits.bridges", "limits.routers", "limits.widgets"]);
    expect((await quotaOf(t)).limits["bridges"]).toBe(7);
  });

  it("GET /quotas lists the tenants whose limits are not the defaults; DELETE restores the defaults", async () => {
    const t = tenant("restore");
    await setLimits(t, { bridges: 0 });
    expectError(await bridge(t), 409);
    const names = async () => ((await http("GET", "/quotas")).json as { tenantId: string }[]).map((q) => q.tenantId);
    const before = await names();
    expect(before).toContain(t);
    expect(before).toContain(tenant("full"));
    expect(before).not.toContain(tenant("fresh"));
    // A limit set back to its default is no override.
    await setLimits(tenant("partial"), { routers: -1, bridges: -1 });
    expect(await names()).not.toContain(tenant("partial"));
    // A stale entity tag is a 412, as for any item.
    expectError(await http("DELETE", `/quotas/${t}`, undefined, { "if-match": '"stale"' }), 412);
    expectError(await http("PUT", `/quotas/${t}`, { limits: { bridges: 9 } }, { "if-match": '"stale"' }), 412);
    const del = await http("DELETE", `/quotas/${t}`);
    expect(del.status, del.text).toBe(204);
    expect(await names()).not.toContain(t);
    // Nothing left to restore: a 404, while its GET still answers the defaults.
    expectError(await http("DELETE", `/quotas/${t}`), 404);
    const q = await quotaOf(t);
    expect(q.limits["bridges"]).toBe(-1);
    expect(q.limits["chains"]).toBe(3);
    expect((await bridge(t)).status).toBe(201);
  });

  it("a limit lowered below usage refuses creates and keeps what exists", async () => {
    const t = tenant("lowered");
    for (let i = 0; i < 3; i++) expect((await bridge(t)).status).toBe(201);
    await setLimits(t, { bridges: 1 });
    // The services' cached limits follow within 2 s (at once when the bus brings the change).
    let refused: HttpResult | undefined;
    for (const until = Date.now() + 5_000; Date.now() < until; ) {
      const r = await bridge(t, gw2);
      if (r.status === 409) {
        refused = r;
        break;
      }
      expect(r.status).toBe(201);
      await new Promise((res) => setTimeout(res, 100));
    }
    expect(refused, "no create was refused within 5 s").toBeDefined();
    const used = (await quotaOf(t)).used["bridges"]!;
    expect(used).toBeGreaterThanOrEqual(3);
    expect(refused!.json.violations).toEqual([{ property: "bridges", message: `limit 1, used ${used}` }]);
    const listed = await http("GET", `/bridges?tenant_id=${t}`);
    expect((listed.json as unknown[]).length).toBe(used);
  });

  it("the quota service down: a create whose limits are not known is a 503 naming it, nothing else is refused; then back", async () => {
    const t = tenant("outage");
    await stack.stopService("quota");
    try {
      const r = await bridge(t);
      expectError(r, 503);
      expect(r.json.message).toContain("quota service");
      expect((await http("GET", "/bridges")).status).toBe(200);
      expectError(await http("GET", `/quotas/${t}`), 503);
    } finally {
      await stack.startServices("quota");
    }
    let made = 0;
    for (const until = Date.now() + 20_000; Date.now() < until && made !== 201; ) {
      made = (await bridge(t)).status;
      if (made !== 201) await new Promise((res) => setTimeout(res, 200));
    }
    expect(made).toBe(201);
  });
});
