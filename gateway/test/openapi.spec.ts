// The OpenAPI description validates with a maintained parser and lists every route the gateway
// serves, compared with the catalog the routes come from.
import { validate } from "@readme/openapi-parser";
import { buildCatalog } from "@vnm/kit";
import { describe, expect, it } from "vitest";
import { openApi } from "../src/openapi.ts";

describe("GET /openapi.json", () => {
  const catalog = buildCatalog();
  const doc = JSON.parse(openApi(catalog)) as { paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>; components: { schemas: Record<string, { required?: string[]; properties: Record<string, { readOnly?: boolean; writeOnly?: boolean }> }> } };

  it("is valid OpenAPI 3.1", async () => {
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, JSON.stringify("errors" in result ? result.errors : [])).toBe(true);
  });

  it("lists every route of the catalog, with its body and its error responses", () => {
    const listed = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(listed.sort()).toEqual(catalog.routes.map((r) => `${r.method} ${r.template}`).sort());
    const post = doc.paths["/bridges"]!["post"]!;
    expect(post.requestBody).toBeDefined();
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(["201", "400", "404", "409"]));
  });

  it("marks required, read-only and write-only fields from the field behaviours", () => {
    const schemas = doc.components.schemas;
    expect(schemas["vnm.tracing.v1.TraceRequest"]!.required).toEqual(["name", "deviceType", "deviceId", "condition"]);
    expect(schemas["vnm.bridge.v1.Bridge"]!.properties["vxlanPortIds"]!.readOnly).toBe(true);
    expect(schemas["vnm.identity.v1.User"]!.properties["password"]!.writeOnly).toBe(true);
  });
});
