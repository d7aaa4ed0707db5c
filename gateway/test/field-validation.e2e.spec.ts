// Unknown fields in a body (a typo such as "nmae"): ignored, as clients that PUT back what they
// GET rely on, but said in Warning headers; ?fieldValidation=Strict refuses them, Ignore keeps quiet.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, httpClient, Stack, waitFor } from "./harness.ts";

// Bridges, and identity for the login; the gateway answers the other domains' routes with a 503.
const stack = new Stack();
let gw = "";
let auth: Record<string, string> = {};
const http = httpClient(() => gw, "application/json");
const as = (headers: Record<string, string> = {}) => ({ ...auth, ...headers });
const warnings = (r: { headers: Headers }) => r.headers.get("warning");

beforeAll(async () => {
  await stack.startServices("bridge", "identity");
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
