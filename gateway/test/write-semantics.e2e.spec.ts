// How a body changes an item beyond POST and PUT as they are: unknown fields (a typo such as
// "nmae") are ignored, as clients that PUT back what they GET rely on, but said in Warning headers
// (?fieldValidation=Strict refuses them, Ignore keeps quiet); PATCH with a JSON Merge Patch changes
// only the fields it names.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, httpClient, Stack, waitFor } from "@vnm/e2e/harness";

// Bridges, identity for the login, and policy (with routing, where a mirror's port is) for the
// chains and mirrors a bridge names; the gateway answers the other domains' routes with a 503.
const stack = new Stack();
let gw = "";
let auth: Record<string, string> = {};
const http = httpClient(() => gw, "application/json");
const as = (headers: Record<string, string> = {}) => ({ ...auth, ...headers });
const warnings = (r: { headers: Headers }) => r.headers.get("warning");

beforeAll(async () => {
  await stack.startServices("bridge", "identity", "policy", "routing");
  gw = await stack.startGateway({}, false);
  await waitFor("a login", async () => {
    auth = { "x-auth-token": await stack.login(gw, "admin", stack.adminPassword) };
    return true;
  });
});
afterAll(() => stack.stop());

describe("unknown fields", () => {
  it("are ignored and named in a Warning header each; known ones, read-only ones included, are silent", async () => {
    const r = await http("POST", "/bridges", { nmae: "typo", name: "blue", tenantId: "acme", colour: "red" }, as());
    expect(r.status).toBe(201);
    expect(r.json.name).toBe("blue");
    expect(warnings(r)).toBe('299 - "unknown field \\"nmae\\"", 299 - "unknown field \\"colour\\""');
    // What a GET gave, PUT back as it is (links, id and other read-only fields included): no warning.
    const back = await http("PUT", r.json.uri, r.json, as());
    expect(back.status).toBe(200);
    expect(warnings(back)).toBeNull();
  });

  it("with ?fieldValidation=Strict are a 400 naming each, and nothing is written", async () => {
    const before = (await http("GET", "/bridges?tenant_id=strict", undefined, as())).json.length;
    const r = await http("POST", "/bridges?fieldValidation=Strict", { nmae: "typo", name: 7, tenantId: "strict" }, as());
    expectError(r, 400);
    expect(r.json.violations).toEqual(
      expect.arrayContaining([
        { property: "name", message: expect.any(String) },
        { property: "nmae", message: "is not a field of this resource" },
      ]),
    );
    expect((await http("GET", "/bridges?tenant_id=strict", undefined, as())).json).toHaveLength(before);
    expect((await http("POST", "/bridges?fieldValidation=Strict", { name: "ok", tenantId: "strict" }, as())).status).toBe(201);
  });

  it("with ?fieldValidation=Ignore are not mentioned; another mode is a 400 naming the parameter", async () => {
    const quiet = await http("POST", "/bridges?fieldValidation=Ignore", { nmae: "typo", tenantId: "acme" }, as());
    expect(quiet.status).toBe(201);
    expect(warnings(quiet)).toBeNull();
    const bad = await http("POST", "/bridges?fieldValidation=strict", { name: "x" }, as());
    expectError(bad, 400);
    expect(bad.json.violations).toEqual([{ property: "fieldValidation", message: "must be one of Ignore, Warn, Strict" }]);
  });

  it("with quotes, control characters or non-ASCII letters in their names still make a valid header", async () => {
    const r = await http("POST", "/bridges", { 'na"me\u0007\u00e9\u4e2d': 1, tenantId: "acme" }, as());
    expect(r.status).toBe(201);
    expect(warnings(r)).toBe('299 - "unknown field \\"na\\\\\\"me\\\\u0007\\\\u00e9\\\\u4e2d\\""');
    const many = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`x${i}`, i]));
    const m = await http("POST", "/bridges", { ...many, tenantId: "acme" }, as());
    expect(m.status).toBe(201);
    expect(warnings(m)?.split(", 299")).toHaveLength(11);
    expect(warnings(m)).toMatch(/"5 more unknown fields"$/);
  });
});

describe("PATCH with a JSON Merge Patch", () => {
  const MERGE = { "content-type": "application/merge-patch+json" };
  const create = async (body: Record<string, unknown>) => (await http("POST", "/bridges", body, as())).json;

  it("changes only the fields it names; null removes one; the lists and the item read it at once", async () => {
    const b = await create({ name: "kept", tenantId: "patch", adminStateUp: true });
    expect((await http("GET", "/bridges?tenant_id=patch", undefined, as())).status).toBe(200); // the list, cached
    const before = (await http("GET", b.uri, undefined, as())).headers.get("etag");
    const r = await http("PATCH", b.uri, { adminStateUp: false }, as(MERGE));
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ id: b.id, name: "kept", tenantId: "patch", adminStateUp: false });
    expect(r.headers.get("etag")).not.toBe(before);
    expect((await http("GET", b.uri, undefined, as())).json).toMatchObject({ name: "kept", adminStateUp: false });
    expect((await http("GET", "/bridges?tenant_id=patch", undefined, as())).json.find((x: { id: string }) => x.id === b.id)).toMatchObject({ adminStateUp: false });
    const cleared = await http("PATCH", b.uri, { name: null }, as(MERGE));
    expect(cleared.status).toBe(200);
    expect(cleared.json).toMatchObject({ name: null, tenantId: "patch", adminStateUp: false });
  });

  it("is validated as a PUT, honours If-Match, and names unknown fields", async () => {
    const b = await create({ name: "v", tenantId: "patch" });
    const bad = await http("PATCH", b.uri, { name: 7 }, as(MERGE));
    expectError(bad, 400);
    expect(bad.json.violations.map((v: { property: string }) => v.property)).toEqual(["name"]);
    const tag = (await http("GET", b.uri, undefined, as())).headers.get("etag")!;
    expect((await http("PATCH", b.uri, { name: "first" }, as({ ...MERGE, "if-match": tag }))).status).toBe(200);
    const stale = await http("PATCH", b.uri, { name: "second" }, as({ ...MERGE, "if-match": tag }));
    expectError(stale, 412);
    expect((await http("GET", b.uri, undefined, as())).json.name).toBe("first");
    const typo = await http("PATCH", b.uri, { nmae: "x" }, as(MERGE));
    expect(typo.status).toBe(200);
    expect(typo.headers.get("warning")).toBe('299 - "unknown field \\"nmae\\""');
  });

  it("is one call to the service, as a PUT or DELETE with If-Match is: the item is read, merged and checked in the write's own transaction", async () => {
    const calls = async (method: string) => {
      const text = (await http("GET", "/metrics", undefined, as())).text;
      let n = 0;
      for (const m of text.matchAll(new RegExp(`^vnm_grpc_client_calls_total\\{[^}]*method="${method}"[^}]*\\} (\\d+)`, "gm"))) n += Number(m[1]);
      return n;
    };
    const b = await create({ name: "one", tenantId: "patch" });
    const tag = (await http("GET", b.uri, undefined, as())).headers.get("etag")!;
    const [gets, updates, deletes] = [await calls("GetBridge"), await calls("UpdateBridge"), await calls("DeleteBridge")];
    const patched = await http("PATCH", b.uri, { name: "two" }, as({ ...MERGE, "if-match": tag }));
    expect(patched.status).toBe(200);
    const put = await http("PUT", b.uri, { name: "three", tenantId: "patch" }, as({ "if-match": patched.headers.get("etag")! }));
    expect(put.status).toBe(200);
    expectError(await http("DELETE", b.uri, undefined, as({ "if-match": tag })), 412);
    expect((await http("DELETE", b.uri, undefined, as({ "if-match": put.headers.get("etag")! }))).status).toBe(204);
    expect([await calls("GetBridge"), await calls("UpdateBridge"), await calls("DeleteBridge")]).toEqual([gets, updates + 2, deletes + 2]);
  });

  it("merges into the item as the write finds it: concurrent patches of different fields all stay", async () => {
    const b = await create({ name: "n0", tenantId: "patch", adminStateUp: true });
    // The filter and the mirror must exist (policy.md §3, §4).
    const chain = (await http("POST", "/chains", {}, as())).json.id;
    const router = (await http("POST", "/routers", {}, as())).json.id;
    const port = (await http("POST", `/routers/${router}/ports`, {}, as())).json.id;
    const mirror = (await http("POST", "/mirrors", { toPortId: port }, as())).json.id;
    const results = await Promise.all([
      http("PATCH", b.uri, { name: "renamed" }, as(MERGE)),
      http("PATCH", b.uri, { adminStateUp: false }, as(MERGE)),
      http("PATCH", b.uri, { inboundFilterId: chain }, as(MERGE)),
      http("PATCH", b.uri, { outboundMirrorIds: [mirror] }, as(MERGE)),
    ]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect((await http("GET", b.uri, undefined, as())).json).toMatchObject({
      name: "renamed",
      adminStateUp: false,
      inboundFilterId: chain,
      outboundMirrorIds: [mirror],
    });
  });

  it("If-None-Match on a write is checked against the item too: * or its tag is a 412, another tag lets it through", async () => {
    const b = await create({ name: "inm", tenantId: "patch" });
    const tag = (await http("GET", b.uri, undefined, as())).headers.get("etag")!;
    const star = await http("PUT", b.uri, { name: "x", tenantId: "patch" }, as({ "if-none-match": "*" }));
    expectError(star, 412);
    expect(star.headers.get("etag")).toBe(tag);
    expectError(await http("PATCH", b.uri, { name: "x" }, as({ ...MERGE, "if-none-match": tag })), 412);
    expect((await http("PATCH", b.uri, { name: "y" }, as({ ...MERGE, "if-none-match": '"other"' }))).status).toBe(200);
    expect((await http("GET", b.uri, undefined, as())).json.name).toBe("y");
  });

  it("in another media type is a 415 with Accept-Patch; not an object, a 400; a missing item, a 404; no PUT, a 405", async () => {
    const b = await create({ name: "m", tenantId: "patch" });
    const json = await http("PATCH", b.uri, { name: "x" }, as());
    expectError(json, 415);
    expect(json.headers.get("accept-patch")).toBe("application/merge-patch+json");
    expectError(await http("PATCH", b.uri, "[1]", as(MERGE)), 400);
    // Nested deeper than a recursive merge's call stack goes: judged like any body, not a 500.
    const deep = await http("PATCH", b.uri, `{"name":${'{"a":'.repeat(20_000)}1${"}".repeat(20_000)}}`, as(MERGE));
    expectError(deep, 400);
    expect(deep.json.violations.map((v: { property: string }) => v.property)).toEqual(["name"]);
    expectError(await http("PATCH", "/bridges/00000000-0000-4000-8000-00000000fffe", { name: "x" }, as(MERGE)), 404);
    const list = await http("PATCH", "/bridges", { name: "x" }, as(MERGE));
    expectError(list, 405);
    expect(list.headers.get("allow")).toBe("GET, POST");
    expect((await http("GET", b.uri, undefined, as())).headers.get("accept-patch")).toBe("application/merge-patch+json");
  });
});
