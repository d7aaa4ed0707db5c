// QoS Policy (v1) end to end: the qos service behind the gateway, real Postgres, NATS and
// Redis. Fields and defaults, tenancy as for bridges, the rule lists, and the service lost.
import { beforeAll, describe, expect, it } from "vitest";
import { type HttpResult, expectError, httpClient, useStack, expectServiceLossAndReturn } from "../harness/harness.ts";

const POLICY = "application/vnd.org.service.QOSPolicy-v1+json";
const POLICIES = "application/vnd.org.service.collection.QOSPolicy-v1+json";
const fx = useStack();
const http = httpClient(() => fx.gw, POLICY, () => fx.stack.adminToken);
const PASSWORD = "qos-password-12";
const tokens: Record<string, string> = {};
const as = (who: string) => ({ "x-auth-token": tokens[who]! });

beforeAll(async () => {
  const users = [
    ["taA", "tenant_admin", "A"],
    ["tuA", "tenant_user", "A"],
    ["taB", "tenant_admin", "B"],
  ];
  for (const [who, role, tenantId] of users) {
    const name = `${who}-${fx.stack.id}`;
    const r = await http("POST", "/users", { name, password: PASSWORD, tenantId, roles: [role] }, { "content-type": "application/json" });
    expect(r.status).toBe(201);
    tokens[who!] = await fx.stack.login(fx.gw, name, PASSWORD);
  }
});

describe("fields", () => {
  it("creates with defaults, links to its rule lists, and is listed under its media types", async () => {
    const r = await http("POST", "/qos_policies", { name: "gold" });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toBe(POLICY);
    expect(r.json).toMatchObject({ name: "gold", shared: false, description: "", tenantId: null });
    expect(r.json.dscpRules).toBe(`${r.json.uri}/qos_dscp_rules`);
    expect(r.json.bwLimitRules).toBe(`${r.json.uri}/qos_bw_limit_rules`);
    for (const link of [r.json.dscpRules, r.json.bwLimitRules]) {
      const l = await http("GET", link);
      expect(l.status).toBe(200);
      expect(l.json).toEqual([]);
    }
    const list = await http("GET", "/qos_policies", undefined, { accept: POLICIES });
    expect(list.headers.get("content-type")).toBe(POLICIES);
    expect(list.json.map((p: { id: string }) => p.id)).toContain(r.json.id);
    expect((await http("GET", "/")).json.qosPolicyTemplate).toMatch(/\/qos_policies\/\{id\}$/);
  });

  it("PUT replaces: omitted fields return to their defaults", async () => {
    const r = await http("POST", "/qos_policies", { name: "silver", shared: true, description: "d" });
    const put = await http("PUT", `/qos_policies/${r.json.id}`, { name: "bronze" });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ name: "bronze", shared: false, description: "" });
    expect((await http("DELETE", `/qos_policies/${r.json.id}`)).status).toBe(204);
    expectError(await http("GET", `/qos_policies/${r.json.id}`), 404);
    expectError(await http("GET", `${r.json.uri}/qos_dscp_rules`), 404);
  });

  it("refuses a missing, empty or too long name and wrong types with 400 naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: "x".repeat(256) }, "name"],
      [{ name: "ok", shared: "maybe" }, "shared"],
      [{ name: "ok", description: 7 }, "description"],
    ];
    for (const [body, property] of cases) {
      const r = await http("POST", "/qos_policies", body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    }
    expect((await http("POST", "/qos_policies", { name: "x".repeat(255) })).status).toBe(201);
  });
});

describe("tenancy (as for bridges)", () => {
  let ofA: HttpResult;
  beforeAll(async () => {
    ofA = await http("POST", "/qos_policies", { name: "a's" }, as("taA"));
  });

  it("a tenant admin creates in its own tenant, and may not name another", async () => {
    expect(ofA.status).toBe(201);
    expect(ofA.json.tenantId).toBe("A");
    expectError(await http("POST", "/qos_policies", { name: "x", tenantId: "B" }, as("taA")), 403);
  });

  it("another tenant's policy and its rule lists are not there (404); lists hold one's own only", async () => {
    expectError(await http("GET", ofA.json.uri, undefined, as("taB")), 404);
    expectError(await http("GET", ofA.json.dscpRules, undefined, as("taB")), 404);
    expectError(await http("PUT", ofA.json.uri, { name: "mine" }, as("taB")), 404);
    expectError(await http("DELETE", ofA.json.uri, undefined, as("taB")), 404);
    const listB = (await http("GET", "/qos_policies", undefined, as("taB"))).json;
    expect(listB.map((p: { id: string }) => p.id)).not.toContain(ofA.json.id);
    expect((await http("GET", "/qos_policies?tenant_id=A", undefined, as("taB"))).json).toEqual([]);
    const filtered = (await http("GET", "/qos_policies?tenant_id=A")).json;
    expect(filtered.every((p: { tenantId: string }) => p.tenantId === "A")).toBe(true);
    expect(filtered.map((p: { id: string }) => p.id)).toContain(ofA.json.id);
  });

  it("a tenant user reads its tenant's policies and may not write", async () => {
    expect((await http("GET", ofA.json.uri, undefined, as("tuA"))).status).toBe(200);
    expectError(await http("POST", "/qos_policies", { name: "u" }, as("tuA")), 403);
    expectError(await http("DELETE", ofA.json.uri, undefined, as("tuA")), 403);
  });
});

describe("the qos service lost", () => {
  it("answers 503 naming it at once, the rest still works, and serves again when it is back", async () => {
    const p = await http("POST", "/qos_policies", { name: "kept" });
    await expectServiceLossAndReturn(fx, "qos", new URL(p.json.uri).pathname);
  });
});
