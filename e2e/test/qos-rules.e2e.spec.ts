// End to end for a QoS policy's rules, the policy spec's §5: bandwidth limit (QOSRuleBWLimit-v1)
// and DSCP marking (QOSRuleDSCP-v1), created under their policy and served at their own paths;
// their limits (not MidoNet), the policy kept by PUT, a rule following its policy's tenant, and
// the policy's delete taking its rules, announced. Real qos service, gateway, Postgres, NATS and
// Redis.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = "0badbeef-0000-4000-8000-000000000000";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
type Item = Record<string, unknown> & { id: string; uri: string };
const PASSWORD = "qos-rules-pass-12";
const tokens: Record<string, string> = {};
const as = (who: string) => ({ "x-auth-token": tokens[who]! });

beforeAll(async () => {
  for (const [who, role, tenantId] of [
    ["taA", "tenant_admin", "A"],
    ["tuA", "tenant_user", "A"],
    ["taB", "tenant_admin", "B"],
  ] as const) {
    const name = `${who}-r-${fx.stack.id}`;
    expect((await http("POST", "/users", { name, password: PASSWORD, tenantId, roles: [role] })).status).toBe(201);
    tokens[who] = await fx.stack.login(fx.gw, name, PASSWORD);
  }
});

const newPolicy = async (headers: Record<string, string> = {}) => {
  const r = await http("POST", "/qos_policies", { name: "p" }, headers);
  expect(r.status).toBe(201);
  return r.json as Item & { bwLimitRules: string; dscpRules: string };
};

/** The two kinds: their list link on the policy, their own path, media type and one valid body. */
const KINDS = [
  { name: "bandwidth limit", link: "bwLimitRules", path: "/qos_bw_limit_rules", type: "QOSRuleBWLimit-v1", kind: "QosBwLimitRule", body: { maxKbps: 1000, maxBurstKb: 100 } },
  { name: "DSCP marking", link: "dscpRules", path: "/qos_dscp_rules", type: "QOSRuleDSCP-v1", kind: "QosDscpRule", body: { dscpMark: 46 } },
] as const;

const created = (r: HttpResult, type: string, path: string): Item => {
  expect(r.status, r.text).toBe(201);
  expect(r.headers.get("content-type")).toBe(V(type));
  expect(r.json.id).toMatch(UUID);
  expect(r.headers.get("location")).toBe(`${fx.gw}${path}/${r.json.id}`);
  return r.json as Item;
};
const props = (r: HttpResult) => (r.json.violations as { property: string }[]).map((v) => v.property);
const ids = (r: HttpResult) => (r.json as Item[]).map((x) => x.id);

describe("root document (policy spec §0)", () => {
  it("names both rule templates, absolute", async () => {
    const r = await http("GET", "/");
    expect(r.json.qosBwLimitRuleTemplate).toBe(`${fx.gw}/qos_bw_limit_rules/{id}`);
    expect(r.json.qosDscpRuleTemplate).toBe(`${fx.gw}/qos_dscp_rules/{id}`);
  });
});

describe("defaults and representations (§5)", () => {
  it("a bandwidth limit rule: maxKbps 0 and maxBurstKb null by default; policyId is the path's; no tenant shown", async () => {
    const p = await newPolicy();
    const r = created(await http("POST", p.bwLimitRules, { policyId: MISSING }), "QOSRuleBWLimit-v1", "/qos_bw_limit_rules");
    expect(r).toEqual({ id: r.id, maxKbps: 0, maxBurstKb: null, policyId: p.id, uri: `${fx.gw}/qos_bw_limit_rules/${r.id}` });
    const got = await http("GET", r.uri);
    expect(got.headers.get("content-type")).toBe(V("QOSRuleBWLimit-v1"));
    expect(got.json).toEqual(r);
  });

  it("a DSCP marking rule: dscpMark 0 by default", async () => {
    const p = await newPolicy();
    const r = created(await http("POST", p.dscpRules, {}), "QOSRuleDSCP-v1", "/qos_dscp_rules");
    expect(r).toEqual({ id: r.id, dscpMark: 0, policyId: p.id, uri: `${fx.gw}/qos_dscp_rules/${r.id}` });
  });
});

for (const k of KINDS) {
  describe(`${k.name} rules (§5)`, () => {
    it("keep what is sent; a client id is honoured and a duplicate is a 409; the policy's list holds them in order", async () => {
      const p = await newPolicy();
      const id = randomUUID();
      const a = created(await http("POST", p[k.link], { ...k.body, id }), k.type, k.path);
      expect(a).toMatchObject({ ...k.body, id, policyId: p.id });
      expectError(await http("POST", p[k.link], { ...k.body, id }), 409);
      const b = created(await http("POST", p[k.link], k.body), k.type, k.path);
      const list = await http("GET", p[k.link]);
      expect(list.status).toBe(200);
      expect(list.headers.get("content-type")).toBe(V(`collection.${k.type}`));
      expect(ids(list)).toEqual([a.id, b.id]);
      expect(ids(await http("GET", k.path))).toEqual(expect.arrayContaining([a.id, b.id]));
    });

    it("under a missing policy: 404 for the list and for a POST, before the body is judged", async () => {
      expectError(await http("GET", `/qos_policies/${MISSING}${k.path}`), 404);
      expectError(await http("POST", `/qos_policies/${MISSING}${k.path}`, { maxKbps: -1, dscpMark: 99 }), 404);
      expectError(await http("POST", `/qos_policies/not-a-uuid${k.path}`, {}), 404);
    });

    it("POST at the rules' own path is a 405 with Allow", async () => {
      const r = await http("POST", k.path, k.body);
      expectError(r, 405);
      expect(r.headers.get("allow")).toBe("GET");
    });

    it("PUT changes the values and keeps the policy (a body policyId is ignored); omitted values return to their defaults", async () => {
      const p = await newPolicy();
      const other = await newPolicy();
      const r = created(await http("POST", p[k.link], k.body), k.type, k.path);
      const changed = k.kind === "QosBwLimitRule" ? { maxKbps: 5, maxBurstKb: 7 } : { dscpMark: 10 };
      const put = await http("PUT", r.uri, { ...changed, policyId: other.id });
      expect(put.status).toBe(200);
      expect(put.json).toEqual({ ...r, ...changed });
      expect((await http("GET", r.uri)).json).toEqual(put.json);
      const defaults = k.kind === "QosBwLimitRule" ? { maxKbps: 0, maxBurstKb: null } : { dscpMark: 0 };
      expect((await http("PUT", r.uri, {})).json).toEqual({ ...r, ...defaults });
      expect((await http("GET", other[k.link])).json).toEqual([]);
      expectError(await http("PUT", `${k.path}/${MISSING}`, {}), 404);
    });

    it("DELETE is 204, then 404; a missing rule's DELETE is a 404", async () => {
      const p = await newPolicy();
      const r = created(await http("POST", p[k.link], k.body), k.type, k.path);
      const d = await http("DELETE", r.uri);
      expect(d.status).toBe(204);
      expect(d.text).toBe("");
      expectError(await http("GET", r.uri), 404);
      expectError(await http("DELETE", r.uri), 404);
      expectError(await http("GET", `${k.path}/not-a-uuid`), 404);
      expect((await http("GET", p[k.link])).json).toEqual([]);
    });
  });
}

describe("limits (not MidoNet): 400 on the field, and nothing is stored", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["bwLimitRules", { maxKbps: -1 }, "maxKbps"],
    ["bwLimitRules", { maxKbps: 10, maxBurstKb: -1 }, "maxBurstKb"],
    ["bwLimitRules", { maxKbps: "fast" }, "maxKbps"],
    ["bwLimitRules", { maxKbps: 2 ** 31 }, "maxKbps"],
    ["dscpRules", { dscpMark: 64 }, "dscpMark"],
    ["dscpRules", { dscpMark: -1 }, "dscpMark"],
    ["dscpRules", { dscpMark: 1.5 }, "dscpMark"],
  ];
  for (const [link, body, property] of cases) {
    it(`${JSON.stringify(body)}: 400 on ${property} (POST and PUT)`, async () => {
      const p = await newPolicy();
      const r = await http("POST", p[link as "dscpRules"], body);
      expectError(r, 400);
      expect(props(r)).toEqual([property]);
      expect((await http("GET", p[link as "dscpRules"])).json).toEqual([]);
      const rule = created(await http("POST", p[link as "dscpRules"], {}), link === "dscpRules" ? "QOSRuleDSCP-v1" : "QOSRuleBWLimit-v1", link === "dscpRules" ? "/qos_dscp_rules" : "/qos_bw_limit_rules");
      const put = await http("PUT", rule.uri, body);
      expectError(put, 400);
      expect(props(put)).toEqual([property]);
      expect((await http("GET", rule.uri)).json).toEqual(rule);
    });
  }
  it("the bounds themselves are accepted", async () => {
    const p = await newPolicy();
    for (const dscpMark of [0, 63]) expect((await http("POST", p.dscpRules, { dscpMark })).json.dscpMark).toBe(dscpMark);
    expect((await http("POST", p.bwLimitRules, { maxKbps: 0, maxBurstKb: 0 })).json).toMatchObject({ maxKbps: 0, maxBurstKb: 0 });
  });
});

describe("the policy's delete takes its rules, announced", () => {
  it("both kinds go with it; another policy's stay; NATS carries a deleted per rule", async () => {
    const p = await newPolicy();
    const keep = await newPolicy();
    const bw = created(await http("POST", p.bwLimitRules, { maxKbps: 1 }), "QOSRuleBWLimit-v1", "/qos_bw_limit_rules");
    const dscp = created(await http("POST", p.dscpRules, { dscpMark: 8 }), "QOSRuleDSCP-v1", "/qos_dscp_rules");
    const kept = created(await http("POST", keep.dscpRules, { dscpMark: 8 }), "QOSRuleDSCP-v1", "/qos_dscp_rules");
    expect(ids(await http("GET", "/qos_dscp_rules"))).toContain(dscp.id); // fills the cache
    expect((await http("GET", bw.uri)).status).toBe(200);
    expect((await http("DELETE", p.uri)).status).toBe(204);
    expectError(await http("GET", bw.uri), 404);
    expectError(await http("GET", dscp.uri), 404);
    expect(ids(await http("GET", "/qos_dscp_rules"))).not.toContain(dscp.id);
    expect((await http("GET", kept.uri)).status).toBe(200);
    const changesOf = (id: string) => fx.events.filter((c) => c.data["id"] === id).map((c) => c.subject.slice(`${fx.stack.prefix}.qos.`.length));
    await waitFor("the rules' deletes announced", async () => changesOf(bw.id).length >= 2 && changesOf(dscp.id).length >= 2 && changesOf(p.id).length >= 2, 5_000);
    expect(changesOf(bw.id)).toEqual(["QosBwLimitRule.created", "QosBwLimitRule.deleted"]);
    expect(changesOf(dscp.id)).toEqual(["QosDscpRule.created", "QosDscpRule.deleted"]);
    expect(changesOf(p.id)).toEqual(["QosPolicy.created", "QosPolicy.deleted"]);
    expect(changesOf(kept.id)).toEqual(["QosDscpRule.created"]);
    const gone = fx.events.find((c) => c.data["id"] === bw.id && c.subject.endsWith(".deleted"))!;
    expect(gone.data).toMatchObject({ kind: "QosBwLimitRule", path: `/qos_bw_limit_rules/${bw.id}` });
  });
});

describe("the policy's rules array (MidoNet's form)", () => {
  const bwOf = async (p: Item) => (await http("GET", `${p.uri}/qos_bw_limit_rules`)).json as Item[];
  const dscpOf = async (p: Item) => (await http("GET", `${p.uri}/qos_dscp_rules`)).json as Item[];

  it("a POST creates each rule, announced; the array is never shown", async () => {
    const id = randomUUID();
    const r = await http("POST", "/qos_policies", {
      name: "with rules",
      rules: [
        { id, type: "bandwidth_limit", max_kbps: 100, max_burst_kbps: 10 },
        { type: "dscp_marking", dscp_mark: 8 },
      ],
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json).not.toHaveProperty("rules");
    expect(await bwOf(r.json)).toEqual([{ id, maxKbps: 100, maxBurstKb: 10, policyId: r.json.id, uri: `${fx.gw}/qos_bw_limit_rules/${id}` }]);
    const [dscp] = await dscpOf(r.json);
    expect(dscp).toMatchObject({ dscpMark: 8, policyId: r.json.id });
    expect((await http("GET", r.json.uri)).json).not.toHaveProperty("rules");
    await waitFor("the rules announced", async () => fx.events.some((c) => c.data["id"] === id && c.subject.endsWith(".QosBwLimitRule.created")), 5_000);
  });

  it("a PUT with rules makes them the policy's: new ids created, the others' values replaced, those left out deleted; without rules it leaves them", async () => {
    const bwId = randomUUID();
    const p = (await http("POST", "/qos_policies", { name: "p", rules: [{ id: bwId, type: "bandwidth_limit", max_kbps: 1, max_burst_kbps: 2 }, { type: "dscp_marking", dscp_mark: 1 }] })).json;
    const [oldDscp] = await dscpOf(p);
    expect((await http("PUT", p.uri, { name: "renamed" })).status).toBe(200);
    expect((await bwOf(p)).map((x) => x.id)).toEqual([bwId]);
    expect((await dscpOf(p)).map((x) => x.id)).toEqual([oldDscp!.id]);
    const put = await http("PUT", p.uri, { name: "p", rules: [{ id: bwId, type: "bandwidth_limit", max_kbps: 200 }, { type: "dscp_marking", dscp_mark: 16 }] });
    expect(put.status, put.text).toBe(200);
    expect(await bwOf(p)).toEqual([expect.objectContaining({ id: bwId, maxKbps: 200, maxBurstKb: null })]);
    const dscp = await dscpOf(p);
    expect(dscp).toHaveLength(1);
    expect(dscp[0]).toMatchObject({ dscpMark: 16 });
    expect(dscp[0]!.id).not.toBe(oldDscp!.id);
    expectError(await http("GET", oldDscp!.uri), 404);
  });

  it("an empty rules array deletes every rule of the policy, by PUT or by PATCH, each deletion announced", async () => {
    for (const write of ["PUT", "PATCH"] as const) {
      const p = (await http("POST", "/qos_policies", { name: "p", rules: [{ type: "bandwidth_limit", max_kbps: 1 }, { type: "dscp_marking", dscp_mark: 1 }] })).json;
      const [bw] = await bwOf(p);
      const [dscp] = await dscpOf(p);
      const r = await http(write, p.uri, write === "PUT" ? { name: "p", rules: [] } : { rules: [] }, write === "PATCH" ? { "content-type": "application/merge-patch+json" } : {});
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ id: p.id, name: "p" });
      expect(await bwOf(p)).toEqual([]);
      expect(await dscpOf(p)).toEqual([]);
      const deleted = (id: string) => fx.events.some((c) => c.data["id"] === id && c.subject.endsWith(".deleted"));
      await waitFor(`${write}: the rules' deletions announced`, async () => deleted(bw!.id) && deleted(dscp!.id), 5_000);
    }
  });

  it("a rule's type and values are checked (400), and a taken id is a 409; nothing is stored", async () => {
    for (const [rule, property] of [
      [{ type: "minimum_bandwidth" }, "rules"],
      [{ max_kbps: 5 }, "rules"],
      [{ type: "dscp_marking", dscp_mark: 64 }, "rules"],
      [{ type: "bandwidth_limit", max_kbps: -1 }, "rules"],
    ] as const) {
      const r = await http("POST", "/qos_policies", { name: "bad", rules: [rule] });
      expectError(r, 400);
      expect(props(r)[0]).toMatch(new RegExp(`^${property}`));
    }
    const p = await newPolicy();
    const taken = created(await http("POST", p.dscpRules, {}), "QOSRuleDSCP-v1", "/qos_dscp_rules");
    const before = (await http("GET", "/qos_policies")).json.length;
    expectError(await http("POST", "/qos_policies", { name: "dup", rules: [{ id: taken.id, type: "dscp_marking" }] }), 409);
    expect((await http("GET", "/qos_policies")).json.length).toBe(before);
  });
});

describe("tenancy: a rule follows its policy (§5, §8)", () => {
  let policyA: Item & { bwLimitRules: string; dscpRules: string };
  let ruleA: Item;
  beforeAll(async () => {
    policyA = await newPolicy(as("taA"));
    ruleA = created(await http("POST", policyA.dscpRules, { dscpMark: 12 }, as("taA")), "QOSRuleDSCP-v1", "/qos_dscp_rules");
  });

  it("the policy's tenant admin creates, reads, replaces and lists its rules", async () => {
    expect((await http("GET", ruleA.uri, undefined, as("taA"))).json).toEqual(ruleA);
    expect(ids(await http("GET", policyA.dscpRules, undefined, as("taA")))).toEqual([ruleA.id]);
    expect(ids(await http("GET", "/qos_dscp_rules", undefined, as("taA")))).toContain(ruleA.id);
    const bw = created(await http("POST", policyA.bwLimitRules, {}, as("taA")), "QOSRuleBWLimit-v1", "/qos_bw_limit_rules");
    expect((await http("PUT", bw.uri, { maxKbps: 9 }, as("taA"))).json.maxKbps).toBe(9);
    expect((await http("DELETE", bw.uri, undefined, as("taA"))).status).toBe(204);
  });

  it("another tenant's policy's rules are not there: 404 for every method, and its lists leave them out", async () => {
    for (const [method, path, body] of [
      ["GET", ruleA.uri],
      ["PUT", ruleA.uri, { dscpMark: 1 }],
      ["DELETE", ruleA.uri],
      ["GET", policyA.dscpRules],
      ["POST", policyA.dscpRules, { dscpMark: 1 }],
      ["GET", policyA.bwLimitRules],
      ["POST", policyA.bwLimitRules, {}],
    ] as [string, string, unknown?][]) {
      const r = await http(method, path, body, as("taB"));
      expectError(r, 404);
      expect(r.json.message).not.toContain("A");
    }
    expect(ids(await http("GET", "/qos_dscp_rules", undefined, as("taB")))).not.toContain(ruleA.id);
    expect((await http("GET", "/qos_dscp_rules?tenant_id=A", undefined, as("taB"))).json).toEqual([]);
    expect((await http("GET", ruleA.uri)).json).toEqual(ruleA);
    expect(ids(await http("GET", "/qos_dscp_rules?tenant_id=A"))).toContain(ruleA.id);
  });

  it("another tenant's rule answers exactly as a missing one, as an item and as a paging marker", async () => {
    const hidden = await http("GET", ruleA.uri, undefined, as("taB"));
    const missing = await http("GET", `/qos_dscp_rules/${MISSING}`, undefined, as("taB"));
    expect(hidden.json.message.replace(ruleA.id, "<id>")).toBe(missing.json.message.replace(MISSING, "<id>"));
    const byMarker = await http("GET", `/qos_dscp_rules?marker=${ruleA.id}`, undefined, as("taB"));
    const byNone = await http("GET", `/qos_dscp_rules?marker=${MISSING}`, undefined, as("taB"));
    expectError(byMarker, 400);
    expect(byMarker.json.violations).toEqual(byNone.json.violations);
  });

  it("a tenant user reads its tenant's rules and may not write them (403)", async () => {
    expect((await http("GET", ruleA.uri, undefined, as("tuA"))).status).toBe(200);
    expectError(await http("PUT", ruleA.uri, { dscpMark: 1 }, as("tuA")), 403);
    expectError(await http("DELETE", ruleA.uri, undefined, as("tuA")), 403);
    expectError(await http("POST", policyA.dscpRules, {}, as("tuA")), 403);
  });

  it("a policy given to another tenant takes its rules along, cached reads included", async () => {
    const p = await newPolicy(as("taA"));
    const r = created(await http("POST", p.dscpRules, {}, as("taA")), "QOSRuleDSCP-v1", "/qos_dscp_rules");
    expect((await http("GET", r.uri, undefined, as("taA"))).status).toBe(200); // fills the cache
    expect((await http("PUT", p.uri, { name: "moved", tenantId: "B" })).status).toBe(200);
    await waitFor("the rule hidden from its old tenant", async () => (await http("GET", r.uri, undefined, as("taA"))).status === 404, 5_000);
    expect((await http("GET", r.uri, undefined, as("taB"))).json).toEqual(r);
  });
});
