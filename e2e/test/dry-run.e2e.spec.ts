// Dry runs (docs/api.md, "Dry runs"): a write with ?dryRun=All runs every check and answers as
// the write would, status, body and headers, but stores nothing, announces nothing on /events,
// leaves the gateway's cached lists as they were and counts against no quota. Real services,
// gateway, Postgres, NATS and Redis; one mechanism for every kind (the kit's write transaction,
// rolled back), so kinds of four services and the compat family are tried.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, openFeed, Stack, waitFor } from "../harness/harness.ts";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const DRY = "?dryRun=All";
const tenant = (name: string) => `${name}-${stack.id}`;

beforeAll(async () => {
  await stack.startServices("identity", "bridge", "policy", "quota", "compat");
  gw = await stack.startGateway({ VNM_RATE_LIMIT: "0", LOG_LEVEL: "info" }, false);
}, 120_000);
afterAll(async () => {
  await stack.stop();
});

const created = async (path: string, body: unknown): Promise<Record<string, unknown> & { id: string; uri: string }> => {
  const r = await http("POST", path, body);
  expect(r.status, r.text).toBe(201);
  return r.json;
};

/** Status, error body and violations' properties: what a client tells two answers apart by. */
const outcome = (r: HttpResult) => ({ status: r.status, type: r.headers.get("content-type"), message: r.json?.message, violations: r.json?.violations });

/**
 * Runs `dry` and then `real` (a write of the bridge service) with the feed open, and waits for
 * `real`'s event: the service's outbox announces in commit order, so an event of the dry run
 * would have come before it. Gives every event seen after a marker bridge's: the changes the
 * test made before may still be on their way to the feed when it opens (the relay publishes
 * after the commit), and they come before the marker's, in the same order.
 */
async function eventsAround(dry: () => Promise<void>, real: () => Promise<string>) {
  const feed = await openFeed(gw, stack.adminToken);
  try {
    const marker = (await created("/bridges", { name: "marker", tenantId: tenant("t") })).id;
    await waitFor("the marker's event", async () => feed.events.some((e) => e.data.id === marker), 10_000);
    const from = feed.events.findIndex((e) => e.data.id === marker) + 1;
    await dry();
    const id = await real();
    await waitFor("the real write's event", async () => feed.events.some((e) => e.data.id === id), 10_000);
    return feed.events.slice(from);
  } finally {
    await feed.close();
  }
}

describe("a dry-run create", () => {
  it("answers 201 with the item, its Location and ETag, but nothing is stored, announced or uncached", async () => {
    const before = await http("GET", "/bridges");
    expect(before.status).toBe(200);
    let dry: HttpResult | undefined;
    const events = await eventsAround(
      async () => {
        dry = await http("POST", `/bridges${DRY}`, { name: "would-be", tenantId: tenant("t") });
      },
      async () => (await created("/bridges", { name: "real", tenantId: tenant("t") })).id,
    );
    const r = dry!;
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({ name: "would-be", tenantId: tenant("t"), adminStateUp: true });
    expect(r.json.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.json.uri).toBe(`${gw}/bridges/${r.json.id}`);
    expect(r.headers.get("location")).toBe(`${gw}/bridges/${r.json.id}`);
    expect(r.headers.get("etag")).toMatch(/^"/);
    expect(r.headers.get("content-type")).toContain("Bridge");
    expect(events.map((e) => e.data.id)).not.toContain(r.json.id);
    expectError(await http("GET", `/bridges/${r.json.id}`), 404);
    const names = ((await http("GET", "/bridges")).json as { name: string }[]).map((b) => b.name);
    expect(names).toContain("real");
    expect(names).not.toContain("would-be");
    // The audit trail records it, marked as a dry run.
    const requestId = r.headers.get("x-request-id");
    await waitFor("the audit record", async () => stack.logLines().some((l) => l["msg"] === "audit" && l["requestId"] === requestId), 5_000);
    expect(stack.logLines().find((l) => l["msg"] === "audit" && l["requestId"] === requestId)).toMatchObject({ method: "POST", status: 201, dryRun: true });
  });

  it("with the id given answers the same body a real create then gets, ETag included", async () => {
    const id = randomUUID();
    const body = { id, name: "same", tenantId: tenant("t"), adminStateUp: false };
    const dry = await http("POST", `/bridges${DRY}`, body);
    expect(dry.status, dry.text).toBe(201);
    expectError(await http("GET", `/bridges/${id}`), 404);
    const real = await http("POST", "/bridges", body);
    expect(real.status, real.text).toBe(201);
    expect(dry.json).toEqual(real.json);
    expect(dry.headers.get("etag")).toBe(real.headers.get("etag"));
    expect(dry.headers.get("location")).toBe(real.headers.get("location"));
  });

  it("of a child (a chain's rule, a bridge's DHCP subnet) stores nothing under its parent", async () => {
    const chain = await created("/chains", { name: "c", tenantId: tenant("t") });
    const rules = `/chains/${chain.id}/rules`;
    const rule = await http("POST", `${rules}${DRY}`, { type: "accept", position: 1 });
    expect(rule.status, rule.text).toBe(201);
    expect(rule.json).toMatchObject({ type: "accept", position: 1, chainId: chain.id });
    expect((await http("GET", rules)).json).toEqual([]);
    const bridge = await created("/bridges", { name: "dhcp", tenantId: tenant("t") });
    const subnet = await http("POST", `/bridges/${bridge.id}/dhcp${DRY}`, { subnetPrefix: "10.9.0.0", subnetLength: 24 });
    expect(subnet.status, subnet.text).toBe(201);
    expect(subnet.headers.get("location")).toBe(`${gw}/bridges/${bridge.id}/dhcp/10.9.0.0_24`);
    expect((await http("GET", `/bridges/${bridge.id}/dhcp`)).json).toEqual([]);
    // Made for real afterwards, with the same answer.
    const real = await http("POST", `/bridges/${bridge.id}/dhcp`, { subnetPrefix: "10.9.0.0", subnetLength: 24 });
    expect(real.status, real.text).toBe(201);
    expect(real.json).toEqual(subnet.json);
  });

  it("in the compat family stores nothing either", async () => {
    const r = await http("POST", `/compat/lb/health_monitors${DRY}`, { tenant_id: tenant("t"), type: "TCP" });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({ tenant_id: tenant("t"), type: "TCP" });
    expectError(await http("GET", `/compat/lb/health_monitors/${r.json.id}`), 404);
  });
});

describe("a dry run's refusals are the write's", () => {
  it("an invalid body: the same 400 naming the same fields", async () => {
    const body = { name: "x".repeat(300), tenantId: tenant("t"), inboundFilterId: "not-a-uuid" };
    const dry = await http("POST", `/bridges${DRY}`, body);
    expectError(dry, 400);
    expect(outcome(dry)).toEqual(outcome(await http("POST", "/bridges", body)));
  });

  it("a reference to a missing item: the same 4xx", async () => {
    const body = { name: "refs", tenantId: tenant("t"), inboundFilterId: randomUUID() };
    const dry = await http("POST", `/bridges${DRY}`, body);
    expect(dry.status).toBeGreaterThanOrEqual(400);
    expect(dry.status).toBeLessThan(500);
    expect(outcome(dry)).toEqual(outcome(await http("POST", "/bridges", body)));
  });

  it("a missing parent: the same 404", async () => {
    const path = `/chains/${randomUUID()}/rules`;
    const dry = await http("POST", `${path}${DRY}`, { type: "accept" });
    expectError(dry, 404);
    expect(outcome(dry)).toEqual(outcome(await http("POST", path, { type: "accept" })));
  });

  it("a taken key: the same 409 (a unique constraint, checked by the database)", async () => {
    const bridge = await created("/bridges", { name: "dup", tenantId: tenant("t") });
    const path = `/bridges/${bridge.id}/dhcp`;
    expect((await http("POST", path, { subnetPrefix: "10.7.0.0", subnetLength: 24 })).status).toBe(201);
    const dry = await http("POST", `${path}${DRY}`, { subnetPrefix: "10.7.0.0", subnetLength: 24 });
    expectError(dry, 409);
    expect(outcome(dry)).toEqual(outcome(await http("POST", path, { subnetPrefix: "10.7.0.0", subnetLength: 24 })));
    const again = await http("POST", "/bridges?dryRun=All", { id: bridge.id, name: "dup", tenantId: tenant("t") });
    expectError(again, 409);
  });

  it("a tenant user, who may not write: the same 403", async () => {
    const name = `reader-${stack.id}`;
    expect((await http("POST", "/users", { name, password: "long enough pass phrase 42", tenantId: tenant("t"), roles: ["tenant_user"] })).status).toBe(201);
    const token = await stack.login(gw, name, "long enough pass phrase 42");
    const as = { "x-auth-token": token };
    const dry = await http("POST", `/bridges${DRY}`, { name: "mine", tenantId: tenant("t") }, as);
    expectError(dry, 403);
    expect(outcome(dry)).toEqual(outcome(await http("POST", "/bridges", { name: "mine", tenantId: tenant("t") }, as)));
  });

  it("a stale If-Match: the same 412, with the item's tag", async () => {
    const bridge = await created("/bridges", { name: "tagged", tenantId: tenant("t") });
    const dry = await http("PUT", `${bridge.uri}${DRY}`, { name: "renamed", tenantId: tenant("t") }, { "if-match": '"stale"' });
    expectError(dry, 412);
    const real = await http("PUT", bridge.uri, { name: "renamed", tenantId: tenant("t") }, { "if-match": '"stale"' });
    expect(outcome(dry)).toEqual(outcome(real));
    expect(dry.headers.get("etag")).toBe(real.headers.get("etag"));
  });
});

describe("quotas", () => {
  it("a tenant at its limit is refused a dry run as a create; one below it is not, and a dry run counts for nothing", async () => {
    const t = tenant("quota");
    const set = await http("PUT", `/quotas/${t}`, { limits: { bridges: 1 } });
    expect(set.status, set.text).toBe(200);
    // Below the limit: the dry run passes, and leaves the place to a real create.
    for (let i = 0; i < 3; i++) expect((await http("POST", `/bridges${DRY}`, { name: "d", tenantId: t })).status).toBe(201);
    expect((await http("GET", `/quotas/${t}`)).json.used.bridges).toBe(0);
    await created("/bridges", { name: "only", tenantId: t });
    const dry = await http("POST", `/bridges${DRY}`, { name: "more", tenantId: t });
    expectError(dry, 409);
    expect(dry.json.message).toContain("quota of bridges");
    expect(outcome(dry)).toEqual(outcome(await http("POST", "/bridges", { name: "more", tenantId: t })));
  });

  it("a dry-run change of a quota changes nothing", async () => {
    const t = tenant("limits");
    const dry = await http("PUT", `/quotas/${t}${DRY}`, { limits: { bridges: 7 } });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.json.limits.bridges).toBe(7);
    expect((await http("GET", `/quotas/${t}`)).json.limits.bridges).toBe(-1);
  });
});

describe("a dry-run replace, patch and delete", () => {
  it("PUT and PATCH answer the changed item and its new ETag; the item stays as it was", async () => {
    const bridge = await created("/bridges", { name: "orig", tenantId: tenant("t") });
    const tag = (await http("GET", bridge.uri)).headers.get("etag")!;
    const put = await http("PUT", `${bridge.uri}${DRY}`, { name: "put", tenantId: tenant("t") }, { "if-match": tag });
    expect(put.status, put.text).toBe(200);
    expect(put.json.name).toBe("put");
    expect(put.headers.get("etag")).not.toBe(tag);
    const patch = await http("PATCH", `${bridge.uri}${DRY}`, JSON.stringify({ adminStateUp: false }), { "content-type": "application/merge-patch+json" });
    expect(patch.status, patch.text).toBe(200);
    expect(patch.json).toMatchObject({ name: "orig", adminStateUp: false });
    const now = await http("GET", bridge.uri);
    expect(now.json).toEqual(bridge);
    expect(now.headers.get("etag")).toBe(tag);
  });

  it("DELETE answers 204 and leaves the item and its children; no event", async () => {
    const bridge = await created("/bridges", { name: "kept", tenantId: tenant("t") });
    expect((await http("POST", `/bridges/${bridge.id}/dhcp`, { subnetPrefix: "10.8.0.0", subnetLength: 24 })).status).toBe(201);
    let dry: HttpResult | undefined;
    const events = await eventsAround(
      async () => {
        dry = await http("DELETE", `${bridge.uri}${DRY}`);
      },
      async () => (await created("/bridges", { name: "after", tenantId: tenant("t") })).id,
    );
    expect(dry!.status, dry!.text).toBe(204);
    expect(events.map((e) => e.data.id)).not.toContain(bridge.id);
    expect((await http("GET", bridge.uri)).json).toEqual(bridge);
    expect((await http("GET", `/bridges/${bridge.id}/dhcp`)).json).toHaveLength(1);
    // A dry-run delete of what is not there is the delete's 404.
    const gone = `/bridges/${randomUUID()}`;
    const missing = await http("DELETE", `${gone}${DRY}`);
    expectError(missing, 404);
    expect(outcome(missing)).toEqual(outcome(await http("DELETE", gone)));
  });
});

describe("the parameter", () => {
  it("any value but All is a 400 naming dryRun, and nothing is written", async () => {
    for (const q of ["dryRun=all", "dryRun=", "dryRun=true", "dryRun=All&dryRun=All"]) {
      const r = await http("POST", `/bridges?${q}`, { name: `bad-${q}`, tenantId: tenant("bad") });
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual(["dryRun"]);
    }
    const bridge = await created("/bridges", { name: "target", tenantId: tenant("bad") });
    expectError(await http("DELETE", `${bridge.uri}?dryRun=None`), 400);
    expect((await http("GET", bridge.uri)).status).toBe(200);
    expect(((await http("GET", `/bridges?tenantId=${tenant("bad")}`)).json as unknown[]).length).toBe(1);
  });

  it("is no parameter of a read", async () => {
    const r = await http("GET", `/bridges${DRY}`);
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual(["dryRun"]);
  });

  it("is in the OpenAPI document of every write", async () => {
    type Parameter = { name?: string; $ref?: string };
    const doc = (await http("GET", "/openapi.json")).json as { paths: Record<string, Record<string, { parameters?: Parameter[] }>>; components: { parameters: Record<string, Parameter> } };
    const nameOf = (p: Parameter) => (p.$ref ? doc.components.parameters[p.$ref.split("/").pop()!]?.name : p.name);
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const names = (op.parameters ?? []).map(nameOf);
        if (["post", "put", "patch", "delete"].includes(method) && !["/login", "/logout", "/logout/all"].includes(path)) expect(names, `${method} ${path}`).toContain("dryRun");
        if (method === "get") expect(names, `${method} ${path}`).not.toContain("dryRun");
      }
    }
  });
});
