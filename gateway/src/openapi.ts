// GET /openapi.json: an OpenAPI 3.1 description of every route the gateway serves, derived from
// the same catalog as the routes themselves: paths and methods from the HTTP bindings, media
// types and schemas from the resources (required, read-only and write-only fields from the
// field behaviours), and the error body on every error status.
import type { Catalog, FieldInfo, MessageInfo, Route } from "@vnm/kit";
import { ERROR_TYPE, JSON_TYPE, vendor } from "./media.ts";

type Schema = Record<string, unknown>;

const ref = (m: MessageInfo) => ({ $ref: `#/components/schemas/${m.fullName}` });

function scalarSchema(f: FieldInfo): Schema {
  if (f.jsonObject) return { type: "object" };
  if (f.jsonValue) return {};
  if (f.message) return ref(f.message);
  if (f.type === "bool") return { type: "boolean" };
  if (f.type === "double" || f.type === "float") return { type: "number" };
  if (f.type === "enum") return { type: "string", enum: f.enumValues };
  if (/int|fixed/.test(f.type)) return { type: "integer", format: f.type.includes("64") ? "int64" : "int32" };
  return f.link ? { type: "string", format: "uri" } : { type: "string" };
}

/** A message's schema: every field a client sees or sends, nullable unless required. */
function messageSchema(m: MessageInfo): Schema {
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  for (const f of m.fields) {
    if (f.internal) continue;
    let s = f.repeated ? { type: "array", items: scalarSchema(f) } : scalarSchema(f);
    if (!f.repeated && !f.behaviors.has("REQUIRED") && !s["$ref"]) s = { ...s, type: s["type"] ? [s["type"], "null"] : undefined };
    if (f.behaviors.has("OUTPUT_ONLY") || f.link) s = { ...s, readOnly: true };
    if (f.behaviors.has("INPUT_ONLY")) s = { ...s, writeOnly: true };
    if (f.behaviors.has("IMMUTABLE")) s = { ...s, description: "accepted in POST only" };
    properties[f.name] = Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined));
    if (f.behaviors.has("REQUIRED")) required.push(f.name);
  }
  return required.length > 0 ? { type: "object", properties, required } : { type: "object", properties };
}

/** Every message a route reaches, by full name (bodies, items, and the messages inside them). */
function schemas(catalog: Catalog): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  const add = (m: MessageInfo) => {
    if (out[m.fullName]) return;
    out[m.fullName] = messageSchema(m);
    for (const f of m.fields) if (f.message) add(f.message);
  };
  for (const r of catalog.routes) {
    if (r.bodyField?.message) add(r.bodyField.message);
    if (r.shape.kind !== "empty") add(r.shape.item);
  }
  out["Error"] = {
    type: "object",
    required: ["message", "code"],
    properties: {
      message: { type: "string" },
      code: { type: "integer" },
      violations: { type: "array", items: { type: "object", required: ["property", "message"], properties: { property: { type: "string" }, message: { type: "string" } } } },
      requestId: { type: "string" },
    },
  };
  return out;
}

const ERRORS: Record<string, string> = {
  "400": "Bad input: malformed JSON, a wrong type or value (violations name each field)",
  "401": "No valid token",
  "403": "Not allowed for this caller",
  "404": "No such item (or another tenant's), or a path that names nothing",
  "406": "No acceptable media type",
  "409": "Taken, or still in use",
  "415": "Unsupported Content-Type",
  "503": "A backing service is unavailable (it is named)",
};

function content(type: string, schema: Schema): Schema {
  return { [type]: { schema }, [JSON_TYPE]: { schema } };
}

function operation(route: Route, index: number): Schema {
  const params = route.segments.flatMap((s) => ("variable" in s ? [{ name: s.variable, in: "path", required: true, schema: scalarSchema(route.request.byName.get(s.variable)!) }] : []));
  const query = [...route.queryFields.values()].map((f) => ({ name: f.name, in: "query", required: false, schema: scalarSchema(f) }));
  const responses: Record<string, Schema> = Object.fromEntries(
    Object.entries(ERRORS).map(([code, description]) => [code, { description, content: { [ERROR_TYPE]: { schema: { $ref: "#/components/schemas/Error" } } } }]),
  );
  const ok = route.method === "POST" ? "201" : "200";
  if (route.shape.kind === "empty") responses["204"] = { description: "Done" };
  else if (route.shape.kind === "item") responses[ok] = { description: "The item", content: content(vendor(route.shape.item.resource!.mediaType), ref(route.shape.item)) };
  else responses["200"] = { description: "The collection", content: content(vendor(route.shape.item.resource!.collectionMediaType), { type: "array", items: ref(route.shape.item) }) };
  const op: Schema = { operationId: `${route.domain}.${route.rpc}${index > 0 ? `.${index}` : ""}`, tags: [route.domain], parameters: [...params, ...query], responses };
  const body = route.bodyField?.message;
  if (body) op["requestBody"] = { required: true, content: content(vendor(body.resource?.mediaType ?? ""), ref(body)) };
  return op;
}

export function openApi(catalog: Catalog): string {
  const paths: Record<string, Record<string, Schema>> = {};
  const seen = new Map<string, number>();
  for (const r of catalog.routes) {
    const key = `${r.service}/${r.rpc}`;
    const index = seen.get(key) ?? 0;
    seen.set(key, index + 1);
    paths[r.template] ??= {};
    paths[r.template]![r.method.toLowerCase()] = operation(r, index);
  }
  return JSON.stringify({
    openapi: "3.1.0",
    info: { title: "vnm: virtual network management", version: "v5.0" },
    servers: [{ url: "/" }],
    security: [{ token: [] }, { bearer: [] }],
    paths,
    components: {
      schemas: schemas(catalog),
      securitySchemes: {
        token: { type: "apiKey", in: "header", name: "X-Auth-Token" },
        bearer: { type: "http", scheme: "bearer" },
      },
    },
  });
}
