// The OpenAPI description validates with a maintained parser, passes Redocly's recommended rules
// with no error, and lists every route the gateway serves, compared with the catalog the routes
// come from, with summaries, closed sets and examples a reader can use.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { validate } from "@readme/openapi-parser";
import { buildCatalog, templateShape } from "@vnm/kit";
import { describe, expect, it } from "vitest";
import { openApi } from "../src/openapi.ts";
import { rootDocument } from "../src/root.ts";
import { ROOT } from "@vnm/e2e/harness";

type Operation = { operationId: string; summary?: string; security?: unknown[]; parameters?: { name?: string }[]; requestBody?: { content: Record<string, { example?: unknown }> }; responses: Record<string, { content?: Record<string, { example?: unknown }> }> };
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { required?: string[]; properties: Record<string, { readOnly?: boolean; writeOnly?: boolean; enum?: unknown[]; items?: { enum?: unknown[] } }> }> };
};

describe("GET /openapi.json", () => {
  const catalog = buildCatalog();
  const text = openApi(catalog);
  const doc = JSON.parse(text) as Doc;
  const operations = Object.values(doc.paths).flatMap((ops) => Object.values(ops));

  it("is valid OpenAPI 3.1", async () => {
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, JSON.stringify("errors" in result ? result.errors : [])).toBe(true);
  });

  it("has no error under Redocly's recommended rules (redocly lint, offline)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vnm-openapi-"));
    try {
      const file = join(dir, "openapi.json");
      writeFileSync(file, text);
      const bin = join(ROOT, "node_modules", ".bin", "redocly");
      const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };
      const run = promisify(execFile)(bin, ["lint", "--extends", "recommended", "--format", "summary", "--max-problems", "1000", file], { cwd: dir, env });
      const out = await run.catch((err: { stdout: string; stderr: string }) => err);
      const all = `${out.stdout}${out.stderr}`;
      expect(all, all).not.toMatch(/^error\s/m);
      expect(all).toMatch(/valid|validated/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("states each field's value rules as the proto gives them (buf.validate), for the body and each item of a list", () => {
    const bridge = doc.components.schemas["vnm.bridge.v1.Bridge"]!.properties as Record<string, Record<string, unknown>>;
    expect(bridge["name"]).toMatchObject({ maxLength: 255, pattern: "^[^\\u0000]*$" });
    expect(bridge["inboundFilterId"]).toMatchObject({ format: "uuid" });
    // The rules, and the proto's comment on the field (what the ids must name) as its description.
    expect(bridge["inboundMirrorIds"]).toEqual({ type: "array", maxItems: 64, items: { type: "string", format: "uuid" }, description: expect.stringContaining("Existing mirrors") });
    // The pattern means what the rule does: no NUL.
    expect(new RegExp(bridge["name"]!["pattern"] as string).test("a\u0000b")).toBe(false);
    expect(new RegExp(bridge["name"]!["pattern"] as string).test("blue")).toBe(true);
  });

  it("allows null wherever null is served, and states the strings the API takes for booleans and integers", () => {
    const props = (name: string) => doc.components.schemas[name]!.properties as Record<string, Record<string, unknown>>;
    expect(props("vnm.compat.v1.CompatVip")["session_persistence"]!["anyOf"]).toContainEqual({ type: "null" });
    expect(props("vnm.bridge.v1.Bridge")["adminStateUp"]!["anyOf"]).toEqual([{ type: "boolean" }, { type: "string", enum: ["true", "false"] }, { type: "null" }]);
    const length = props("vnm.bridge.v1.DhcpSubnet")["subnetLength"]!["anyOf"] as Record<string, unknown>[];
    expect(length[0]).toMatchObject({ type: "integer" });
    expect(length[1]).toEqual({ type: "string", pattern: "^-?[0-9]+$" });
  });

  it("answers 413 on every write with a body, and a merge patch's schema is the item's writable fields, each optional", () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) if (op.requestBody && path !== "/login") expect(Object.keys(op.responses), `${method} ${path}`).toContain("413");
    }
    const patch = doc.paths["/bridges/{id}"]!["patch"]!.requestBody!.content["application/merge-patch+json"] as unknown as { schema: { properties: Record<string, unknown>; required?: string[] } };
    expect(Object.keys(patch.schema.properties)).toEqual(["tenantId", "name", "adminStateUp", "inboundFilterId", "outboundFilterId", "inboundMirrorIds", "outboundMirrorIds"]);
    expect(patch.schema.required).toBeUndefined();
  });

  it("describes the root document's templates as RFC 6570 templates and its patch formats as media types, not URLs", () => {
    const root = (doc.paths["/"] as unknown as Record<string, { responses: Record<string, { content: Record<string, { schema: { properties: Record<string, Record<string, unknown>> } }> }> }>)["get"]!;
    const keys = root.responses["200"]!.content["application/vnd.org.service.Application-v5+json"]!.schema.properties;
    expect(keys["bridgesQuery"]).toMatchObject({ format: "uri-template" });
    expect(keys["bridgeTemplate"]).toMatchObject({ format: "uri-template" });
    expect(keys["bridgeAcceptPatch"]).toMatchObject({ const: "application/merge-patch+json" });
    expect(keys["bridgeAcceptPatch"]).not.toHaveProperty("format");
    expect(keys["bridges"]).toMatchObject({ format: "uri" });
  });

  it("lists every route of the catalog, with its body and its error responses, and the gateway's own paths", () => {
    // Paths that differ only in their variables' names are one path in OpenAPI.
    const listed = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${templateShape(path)}`));
    const own = ["GET /", ...catalog.rootDocuments.map((d) => `GET ${d.path}`), "POST /login", "POST /logout", "POST /logout/all", "GET /events", "GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json"];
    // Every item with a PUT also takes a PATCH (a JSON Merge Patch).
    const patches = catalog.routes.filter((r) => r.method === "PUT").map((r) => `PATCH ${templateShape(r.template)}`);
    expect(listed.sort()).toEqual([...catalog.routes.map((r) => `${r.method} ${templateShape(r.template)}`), ...patches, ...own].sort());
    const patch = doc.paths["/bridges/{id}"]!["patch"]!;
    expect(Object.keys(patch.requestBody?.content ?? {})).toEqual(["application/merge-patch+json"]);
    expect(patch.parameters?.map((p) => p.name)).toContain("fieldValidation");
    expect(Object.keys(doc.paths)).toContain("/compat");
    const post = doc.paths["/bridges"]!["post"]!;
    expect(post.requestBody).toBeDefined();
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(["201", "400", "404", "409"]));
  });

  it("agrees with the root document: a patch format beside exactly the item templates that have a PATCH here", () => {
    const root = JSON.parse(rootDocument(catalog, "")) as Record<string, unknown>;
    const templates = Object.entries(root).filter(([key]) => key.endsWith("Template"));
    expect(templates.length).toBeGreaterThan(5);
    for (const [key, template] of templates) {
      const path = Object.keys(doc.paths).find((p) => templateShape(p) === templateShape(String(template)));
      const patch = path ? doc.paths[path]!["patch"] : undefined;
      expect(root[key.replace(/Template$/, "AcceptPatch")], key).toBe(patch ? "application/merge-patch+json" : undefined);
    }
  });

  it("gives every operation a unique id and a summary from the proto comments", () => {
    const ids = operations.map((o) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const o of operations) expect(o.summary, o.operationId).toBeTruthy();
    expect(doc.paths["/bridges"]!["get"]!.summary).toBe("List bridges");
    expect(doc.paths["/login"]!["post"]!.security).toEqual([{ basic: [] }]);
  });

  it("marks required, read-only and write-only fields from the field behaviours, and closed sets as enums", () => {
    const schemas = doc.components.schemas;
    expect(schemas["vnm.tracing.v1.TraceRequest"]!.required).toEqual(["name", "deviceType", "deviceId", "condition"]);
    expect(schemas["vnm.bridge.v1.Bridge"]!.properties["vxlanPortIds"]!.readOnly).toBe(true);
    expect(schemas["vnm.identity.v1.User"]!.properties["password"]!.writeOnly).toBe(true);
    expect(schemas["vnm.tracing.v1.TraceRequest"]!.properties["deviceType"]!.enum).toEqual(["BRIDGE", "PORT", "ROUTER"]);
    expect(schemas["vnm.lb.v1.Pool"]!.properties["lbMethod"]!.enum).toEqual(["ROUND_ROBIN"]);
    expect(schemas["vnm.identity.v1.User"]!.properties["roles"]!.items!.enum).toEqual(["admin", "tenant_admin", "tenant_user"]);
  });

  it("has an example for every media type of every body and answer", () => {
    for (const o of operations) {
      const contents = [o.requestBody?.content, ...Object.values(o.responses).map((r) => r.content)].filter((c) => c !== undefined);
      for (const c of contents) for (const [type, media] of Object.entries(c)) expect(media.example, `${o.operationId} ${type}`).toBeDefined();
    }
    const bridge = doc.paths["/bridges"]!["post"]!.requestBody!.content["application/vnd.org.service.Bridge-v4+json"]!.example as Record<string, unknown>;
    expect(bridge).toMatchObject({ name: "blue", tenantId: "acme" });
    expect(bridge).not.toHaveProperty("uri");
  });

  it("lists each list's filters as query parameters, typed, and no filter on an item or a write", () => {
    type Param = { name?: string; in?: string; schema?: { type?: string; format?: string } };
    const params = (path: string, method: string) => (doc.paths[path]![method]!.parameters ?? []) as Param[];
    const names = (path: string, method: string) => params(path, method).map((p) => p.name);
    expect(names("/bridges", "get")).toEqual(expect.arrayContaining(["tenant_id", "limit", "marker", "name", "adminStateUp", "id"]));
    expect(names("/bridges", "get")).not.toContain("uri");
    expect(params("/bridges", "get").find((p) => p.name === "adminStateUp")!.schema).toEqual({ type: "boolean" });
    expect(params("/compat/lb/pools", "get").find((p) => p.name === "vip_id")!.schema).toEqual({ type: "string", format: "uuid" });
    expect(names("/bridges", "post")).not.toContain("name");
    expect(names("/bridges/{id}", "get")).not.toContain("name");
  });
});
