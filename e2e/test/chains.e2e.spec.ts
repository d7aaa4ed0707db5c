// End to end for filter chains and their rules, the policy spec's §1, §2 and §8: chains'
// fields, tenancy and delete (its rules and the jump rules into it go, announced, and the
// positions left close up); every rule type made and read back, each type's required fields and
// each condition field's limits; positions (inserted at the start, the middle and the end,
// refused past the end, closed up by a delete, and kept 1..n by concurrent writers); the policy
// service lost. Real policy service, gateway, Postgres, NATS and Redis.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, expectServiceLossAndReturn, type HttpResult, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = "0badbeef-0000-4000-8000-000000000000";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
type Item = Record<string, unknown> & { id: string; uri: string };
type Chain = Item & { rules: string; tenantId: string | null };
const PASSWORD = "chains-pass-1234";
const tokens: Record<string, string> = {};
const as = (who: string) => ({ "x-auth-token": tokens[who]! });

beforeAll(async () => {
  for (const [who, role, tenantId] of [
    ["taA", "tenant_admin", "A"],
    ["tuA", "tenant_user", "A"],
    ["taB", "tenant_admin", "B"],
  ] as const) {
    const name = `${who}-c-${fx.stack.id}`;
    expect((await http("POST", "/users", { name, password: PASSWORD, tenantId, roles: [role] })).status).toBe(201);
    tokens[who] = await fx.stack.login(fx.gw, name, PASSWORD);
  }
});

const newChain = async (body: Record<string, unknown> = { name: "c" }, headers: Record<string, string> = {}): Promise<Chain> => {
  const r = await http("POST", "/chains", body, headers);
  expect(r.status, r.text).toBe(201);
  return r.json as Chain;
};
const addRule = async (chain: Chain, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Item> => {
  const r = await http("POST", chain.rules, body, headers);
  expect(r.status, r.text).toBe(201);
  return r.json as Item;
};
const props = (r: HttpResult) => (r.json.violations as { property: string }[] | undefined)?.map((v) => v.property) ?? [];
const ruleIds = async (chain: Chain) => ((await http("GET", chain.rules)).json as Item[]).map((r) => r.id);
const positions = async (chain: Chain) => ((await http("GET", chain.rules)).json as Item[]).map((r) => r.position);

describe("root document (policy spec §0)", () => {
  it("names chains, and the chain and rule templates, absolute", async () => {
    const r = await http("GET", "/");
    expect(r.json.chains).toBe(`${fx.gw}/chains`);
    expect(r.json.chainTemplate).toBe(`${fx.gw}/chains/{id}`);
    expect(r.json.ruleTemplate).toBe(`${fx.gw}/rules/{id}`);
  });
});

describe("chains (policy spec §1)", () => {
  it("creates, reads, lists and deletes under its media types, with its rules link", async () => {
    const id = randomUUID();
    const r = await http("POST", "/chains", { id, name: "in", tenantId: "T1" }, { "content-type": V("Chain-v1") });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get("content-type")).toBe(V("Chain-v1"));
    expect(r.headers.get("location")).toBe(`${fx.gw}/chains/${id}`);
    expect(r.json).toMatchObject({ id, name: "in", tenantId: "T1", uri: `${fx.gw}/chains/${id}`, rules: `${fx.gw}/chains/${id}/rules` });
    const got = await http("GET", `/chains/${id}`, undefined, { accept: V("Chain-v1") });
    expect(got.status).toBe(200);
    expect(got.json).toEqual(r.json);
    expect(got.headers.get("etag")).toBeTruthy();
    const list = await http("GET", "/chains", undefined, { accept: V("collection.Chain-v1") });
    expect(list.headers.get("content-type")).toBe(V("collection.Chain-v1"));
    expect((list.json as Item[]).map((c) => c.id)).toContain(id);
    expect((await http("GET", r.json.rules)).json).toEqual([]);
    expect((await http("DELETE", `/chains/${id}`)).status).toBe(204);
    expectError(await http("GET", `/chains/${id}`), 404);
    expectError(await http("DELETE", `/chains/${id}`), 404);
    expectError(await http("GET", `/chains/${id}/rules`), 404);
  });

  it("takes a random id and no name; several chains may share a name; a name of 256 characters is 400", async () => {
    const a = await newChain({});
    expect(a.id).toMatch(UUID);
    const b = await newChain({ name: "same" });
    const c = await newChain({ name: "same" });
    expect(b.id).not.toBe(c.id);
    const long = await http("POST", "/chains", { name: "x".repeat(256) });
    expectError(long, 400);
    expect(props(long)).toEqual(["name"]);
    expect((await http("POST", "/chains", { name: "x".repeat(255) })).status).toBe(201);
    expectError(await http("POST", "/chains", { id: "nope" }), 400);
    expectError(await http("POST", "/chains", { id: a.id }), 409);
  });

  it("has no update: PUT is 405 with Allow", async () => {
    const c = await newChain();
    const r = await http("PUT", c.uri, { name: "other" });
    expectError(r, 405);
    expect(r.headers.get("allow")).toMatch(/GET/);
    expect(r.headers.get("allow")).toMatch(/DELETE/);
    expect(r.headers.get("allow")).not.toMatch(/PUT/);
    expect((await http("GET", c.uri)).json.name).toBe("c");
  });

  it("pages its list (limit and marker) and filters by tenant_id", async () => {
    const tenant = `page-${randomUUID()}`;
    const made = [];
    for (let i = 0; i < 5; i++) made.push((await newChain({ name: `p${i}`, tenantId: tenant })).id);
    const first = await http("GET", `/chains?tenant_id=${tenant}&limit=2`);
    expect((first.json as Item[]).map((c) => c.id)).toEqual(made.slice(0, 2));
    const next = await http("GET", `/chains?tenant_id=${tenant}&limit=3&marker=${made[1]}`);
    expect((next.json as Item[]).map((c) => c.id)).toEqual(made.slice(2));
    expect((await http("GET", `/chains?tenant_id=${tenant}`)).json).toHaveLength(5);
  });

  it("a delete takes its rules and every jump rule into it; the positions left close up; each announced", async () => {
    const target = await newChain({ name: "target" });
    const own = [await addRule(target, { type: "accept" }), await addRule(target, { type: "drop" })];
    const other = await newChain({ name: "other" });
    const a = await addRule(other, { type: "accept" });
    const jump = await addRule(other, { type: "jump", jumpChainId: target.id, jumpChainName: "target", position: 2 });
    const b = await addRule(other, { type: "drop", position: 3 });
    const third = await newChain({ name: "third" });
    const jump2 = await addRule(third, { type: "jump", jumpChainId: target.id });
    expect(await positions(other)).toEqual([1, 2, 3]);
    expect((await http("DELETE", target.uri)).status).toBe(204);
    for (const r of [...own, jump, jump2]) expectError(await http("GET", r.uri), 404);
    expect(await ruleIds(other)).toEqual([a.id, b.id]);
    expect(await positions(other)).toEqual([1, 2]);
    expect((await http("GET", b.uri)).json.position).toBe(2);
    expect(await ruleIds(third)).toEqual([]);
    await waitFor("each deleted rule and the chain announced", async () => {
      const gone = new Set(fx.events.filter((e) => e.subject.endsWith(".deleted")).map((e) => e.data["id"]));
      return [target, ...own, jump, jump2].every((x) => gone.has(x.id));
    }, 5000);
    expect(fx.events.some((e) => e.subject === `${fx.stack.prefix}.policy.Chain.deleted` && e.data["id"] === target.id)).toBe(true);
    expect(fx.events.some((e) => e.subject === `${fx.stack.prefix}.policy.Rule.deleted` && e.data["id"] === jump.id)).toBe(true);
  });
});

describe("a chain's delete racing jump rules into it", () => {
  it("leaves no jump rule into the deleted chain: each insert is 201 before the delete (then taken) or 404", async () => {
    const target = await newChain({ name: "raced" });
    const sources = [];
    for (let i = 0; i < 6; i++) sources.push(await newChain({ name: `src${i}` }));
    const writes: Promise<HttpResult>[] = [];
    for (let round = 0; round < 3; round++) for (const src of sources) writes.push(http("POST", src.rules, { type: "jump", jumpChainId: target.id }));
    writes.splice(9, 0, http("DELETE", target.uri));
    const answers = await Promise.all(writes);
    expect(answers[9]!.status).toBe(204);
    for (const a of answers.filter((_, i) => i !== 9)) expect([201, 404], a.text).toContain(a.status);
    for (const src of sources) {
      const left = (await http("GET", src.rules)).json as Item[];
      expect(left.filter((r) => r.jumpChainId === target.id)).toEqual([]);
      expect(left.map((r) => r.position)).toEqual(left.map((_, i) => i + 1));
    }
  });
});

describe("tenancy (policy spec §8)", () => {
  let ofA: Chain;
  let ruleOfA: Item;
  beforeAll(async () => {
    ofA = await newChain({ name: "a's" }, as("taA"));
    ruleOfA = await addRule(ofA, { type: "accept" }, as("taA"));
  });

  it("a tenant admin creates in its own tenant and may not name another", async () => {
    expect(ofA.tenantId).toBe("A");
    expectError(await http("POST", "/chains", { name: "x", tenantId: "B" }, as("taA")), 403);
  });

  it("A's own chain, rules and rule list answer 200 to A", async () => {
    expect((await http("GET", ofA.uri, undefined, as("taA"))).status).toBe(200);
    expect((await http("GET", ofA.rules, undefined, as("tuA"))).json.map((r: Item) => r.id)).toEqual([ruleOfA.id]);
    expect((await http("GET", ruleOfA.uri, undefined, as("tuA"))).status).toBe(200);
  });

  it("another tenant's chain, its rules and its rule list are 404 (not 403), and so is a POST into it", async () => {
    expectError(await http("GET", ofA.uri, undefined, as("taB")), 404);
    expectError(await http("GET", ofA.rules, undefined, as("taB")), 404);
    expectError(await http("GET", ruleOfA.uri, undefined, as("taB")), 404);
    expectError(await http("DELETE", ruleOfA.uri, undefined, as("taB")), 404);
    expectError(await http("DELETE", ofA.uri, undefined, as("taB")), 404);
    expectError(await http("POST", ofA.rules, { type: "accept" }, as("taB")), 404);
    expect(await ruleIds(ofA)).toEqual([ruleOfA.id]);
  });

  it("lists hold one's own chains only; ?tenant_id of another is []", async () => {
    await newChain({ name: "b's" }, as("taB"));
    const listA = (await http("GET", "/chains", undefined, as("taA"))).json as Chain[];
    expect(listA.length).toBeGreaterThan(0);
    expect(listA.every((c) => c.tenantId === "A")).toBe(true);
    expect((await http("GET", "/chains?tenant_id=B", undefined, as("taA"))).json).toEqual([]);
    expect(((await http("GET", "/chains?tenant_id=A")).json as Chain[]).every((c) => c.tenantId === "A")).toBe(true);
  });

  it("naming B's chain, or a missing one, as jumpChainId is 404 naming it, and nothing is stored", async () => {
    const ofB = await newChain({ name: "b's" }, as("taB"));
    for (const target of [ofB.id, MISSING]) {
      const r = await http("POST", ofA.rules, { type: "jump", jumpChainId: target }, as("taA"));
      expectError(r, 404);
      expect(r.json.message).toContain(target);
    }
    expect(await ruleIds(ofA)).toEqual([ruleOfA.id]);
    const own = await newChain({ name: "a2" }, as("taA"));
    const ok = await addRule(ofA, { type: "jump", jumpChainId: own.id }, as("taA"));
    expect(ok.jumpChainId).toBe(own.id);
  });

  it("chains with no tenant are not visible to non-admins; a tenant user may not write", async () => {
    const none = await newChain({ name: "nobody's" });
    expect(none.tenantId ?? null).toBeNull();
    expectError(await http("GET", none.uri, undefined, as("taA")), 404);
    expectError(await http("POST", "/chains", { name: "u" }, as("tuA")), 403);
    expectError(await http("POST", ofA.rules, { type: "accept" }, as("tuA")), 403);
    expectError(await http("DELETE", ruleOfA.uri, undefined, as("tuA")), 403);
  });
});

describe("the policy service lost", () => {
  it("answers 503 naming it at once, the rest still works, and serves again when it is back", async () => {
    const c = await newChain();
    await expectServiceLossAndReturn(fx, "policy", new URL(c.uri).pathname);
    expect((await http("GET", "/chains")).status).toBe(200);
  });
});
