// GET /openapi.json: an OpenAPI 3.1 description of every route the gateway serves, derived from
// the same catalog as the routes themselves: paths and methods from the HTTP bindings, summaries
// and descriptions from the proto comments (an RPC's first sentence is its summary), media types
// and schemas from the resources (required, read-only and write-only fields from the field
// behaviours, each field's value rules from its buf.validate constraints), an example per media
// type, and the error body on
// every error status. The gateway's own paths (the root documents, /login, /logout, /events and
// the probes) are described here too.
import { type Catalog, type FieldInfo, MAC_PATTERN, isRecord, type KindInfo, linkFields, memberOf, type MessageInfo, type RootDocumentInfo, type Route, stringMember, templateShape, writableFields } from "@vnm/kit";
import { EXAMPLE_BASE, exampleOf } from "./openapi-examples.ts";
import { ERROR_TYPE, JSON_TYPE, vendor } from "./media.ts";
import { MERGE_PATCH } from "./patch.ts";
import { rootDocument } from "./root.ts";
import { listFilters } from "./lists.ts";

type Schema = Record<string, unknown>;

/** A member of a schema or rule that is itself one (an object), else undefined. */
const objectAt = (v: unknown): Schema | undefined => (isRecord(v) ? v : undefined);

const ref = (m: MessageInfo) => ({ $ref: `#/components/schemas/${m.fullName}` });
const ROOT_TYPE = "Application-v5";
const TOKEN_TYPE = "Token-v1";
const EXAMPLE_ID = "5f2b7c9e-3a41-4d6b-9c1e-8b2f0a7d4e61";

/** A comment's first sentence (the summary, without its full stop) and the rest. */
function split(comment: string | undefined): { summary?: string; description?: string } {
  if (!comment) return {};
  const text = comment.replace(/\s*\n\s*/g, " ").trim();
  const end = text.search(/\.(\s|$)/);
  if (end < 0) return { summary: text };
  const rest = text.slice(end + 1).trim();
  return { summary: text.slice(0, end), description: rest || undefined };
}

const escapeRegex = (text: string) => text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");

/** JSON Schema's words for the value rules of a string, a number or a list (buf.validate's JSON form). */
const STRING_RULES: Record<string, (v: unknown) => Schema> = {
  max_len: (v) => ({ maxLength: Number(v) }),
  min_len: (v) => ({ minLength: Number(v) }),
  pattern: (v) => ({ pattern: v }),
  in: (v) => ({ enum: v }),
  uuid: (v) => (v ? { format: "uuid" } : {}),
  ipv4: (v) => (v ? { format: "ipv4" } : {}),
  ipv6: (v) => (v ? { format: "ipv6" } : {}),
  ip: (v) => (v ? { anyOf: [{ format: "ipv4" }, { format: "ipv6" }] } : {}),
  not_contains: (v) => ({ not: { pattern: escapeRegex(String(v)) } }),
  "[vnm.api.mac]": (v) => (v ? { pattern: MAC_PATTERN } : {}),
  "[vnm.api.text]": (v) => (v ? { pattern: "^[^\\u0000]*$" } : {}),
};
const NUMBER_RULES: Record<string, (v: unknown) => Schema> = {
  gte: (v) => ({ minimum: Number(v) }),
  lte: (v) => ({ maximum: Number(v) }),
  gt: (v) => ({ exclusiveMinimum: Number(v) }),
  lt: (v) => ({ exclusiveMaximum: Number(v) }),
  in: (v) => ({ enum: (Array.isArray(v) ? v : []).map(Number) }),
};
const LIST_RULES: Record<string, (v: unknown) => Schema> = {
  max_items: (v) => ({ maxItems: Number(v) }),
  min_items: (v) => ({ minItems: Number(v) }),
  unique: (v) => (v ? { uniqueItems: true } : {}),
};

/**
 * The schema keywords of one kind of rule (`{max_len: "255", uuid: true}` -> maxLength, format).
 * A rule with no words here stops the document: what the server enforces, the document states.
 */
function keywords(rules: Record<string, unknown> | undefined, words: Record<string, (v: unknown) => Schema>, skip: string[] = []): Schema {
  const out: Schema = {};
  for (const [k, v] of Object.entries(rules ?? {})) {
    if (skip.includes(k)) continue;
    const word = words[k];
    if (!word) throw new Error(`the OpenAPI document has no words for the rule ${k}`);
    Object.assign(out, word(v));
  }
  return out;
}

/** The value rules of one value (a field, or each item of a list) as JSON Schema keywords. */
function valueRules(rules: Record<string, unknown> | undefined): Schema {
  if (!rules) return {};
  const rest = Object.entries(rules).filter(([k]) => k !== "required" && k !== "cel");
  const out = celRules(rules["cel"]);
  if (rest.length === 0) return out;
  const [type, r] = rest[0]!;
  if (rest.length > 1 || !(type === "string" || /int|fixed|float|double/.test(type))) throw new Error(`the OpenAPI document has no words for the rules ${rest.map(([k]) => k).join(", ")}`);
  return { ...keywords(objectAt(r), type === "string" ? STRING_RULES : NUMBER_RULES), ...out };
}

/**
 * A field's own CEL rules (what no standard rule says, as "ethertype in any case"), which JSON
 * Schema cannot state: kept as `x-cel` (id and expression), and said in the description.
 */
function celRules(cel: unknown): Schema {
  const rules = (Array.isArray(cel) ? cel : []).map((r: unknown) => ({ id: stringMember(r, "id"), message: stringMember(r, "message"), expression: stringMember(r, "expression") }));
  if (rules.length === 0) return {};
  return {
    "x-cel": rules.map((r) => ({ id: r.id, expression: r.expression })),
    "x-rule-note": rules.map((r) => `Rule ${r.id}: ${r.message ?? `\`${r.expression}\``}`).join(" "),
  };
}

/** A value that may be null (every field but a required one is answered null when unset). */
function nullable(s: Schema): Schema {
  if (s["$ref"]) return { anyOf: [s, { type: "null" }] };
  const anyOf = s["anyOf"];
  if (Array.isArray(anyOf)) return { ...s, anyOf: [...anyOf, { type: "null" }] };
  if (!s["type"]) return s;
  const out: Schema = { ...s, type: [s["type"], "null"] };
  const values = s["enum"];
  if (Array.isArray(values)) out["enum"] = [...values, null];
  return out;
}

/**
 * What a body may send beyond the field's own type, as the gateway takes it (transcode.ts): a
 * boolean as the string "true" or "false", an integer as a string of digits (int64 values too,
 * which keep every digit that way). Answers always carry the field's own type.
 */
function accepted(s: Schema): Schema {
  const alt = (t: string) => (s["type"] === t ? { anyOf: [s, t === "boolean" ? { type: "string", enum: ["true", "false"] } : { type: "string", pattern: "^-?[0-9]+$" }] } : undefined);
  const items = objectAt(s["items"]);
  if (s["type"] === "array" && items) return { ...s, items: accepted(items) };
  return alt("boolean") ?? alt("integer") ?? s;
}

/** A field a body must carry: REQUIRED by its behaviour, or by its rules. */
const isRequired = (f: FieldInfo) => f.behaviors.has("REQUIRED") || f.rules?.["required"] === true;

/** A field's schema with its value rules (each item's, for a list). */
function ruledSchema(f: FieldInfo): Schema {
  const list = objectAt(f.rules?.["repeated"]);
  if (f.repeated) return { type: "array", items: { ...scalarSchema(f), ...valueRules(objectAt(list?.["items"])) }, ...keywords(list, LIST_RULES, ["items"]) };
  return { ...scalarSchema(f), ...valueRules(f.rules) };
}

function scalarSchema(f: FieldInfo): Schema {
  if (f.jsonObject) return { type: "object", description: "Any JSON object, kept as written" };
  if (f.jsonValue) return {};
  if (f.message) return ref(f.message);
  if (f.values) return { type: "string", enum: f.values };
  if (f.type === "bool") return { type: "boolean" };
  if (f.uuid) return { type: "string", format: "uuid" };
  if (f.type === "double" || f.type === "float") return { type: "number" };
  if (f.type === "enum") return { type: "string", enum: f.enumValues };
  if (/int|fixed/.test(f.type)) return { type: "integer", format: f.type.includes("64") ? "int64" : "int32" };
  // A link whose placeholders are all fields is a URL; one keeping a client's placeholders a template.
  if (f.link) return { type: "string", format: f.link.startsWith("{") || linkFields(f.link).some((p) => !/^[a-z]/i.test(p)) ? "uri-template" : "uri" };
  return { type: "string" };
}

/** A message's schema: every field a client sees or sends, nullable unless required. */
function messageSchema(m: MessageInfo): Schema {
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  for (const f of m.fields) {
    if (f.internal) continue;
    let s = f.link && linkFields(f.link).some((p) => !m.byName.has(p)) ? { type: "string", format: "uri-template" } : accepted(ruledSchema(f));
    if (!f.repeated && !isRequired(f)) s = nullable(s);
    if (f.behaviors.has("OUTPUT_ONLY") || f.link) s = { ...s, readOnly: true };
    if (f.behaviors.has("INPUT_ONLY")) s = { ...s, writeOnly: true };
    const { "x-rule-note": ruleNote, ...ruled } = s;
    s = ruled;
    const notes = [f.comment?.replace(/\s*\n\s*/g, " "), f.behaviors.has("IMMUTABLE") ? "Accepted in POST only." : undefined, ruleNote].filter(Boolean);
    if (notes.length > 0 && !s["$ref"]) s = { ...s, description: notes.join(" ") };
    properties[f.name] = s;
    if (isRequired(f)) required.push(f.name);
  }
  const out: Schema = { type: "object" };
  const { summary, description } = split(m.comment);
  if (summary) out["description"] = [summary + ".", description].filter(Boolean).join(" ");
  out["properties"] = properties;
  if (required.length > 0) out["required"] = required;
  return out;
}

/** The schema of a root document: every key it has, each a URL (or a nested object of them). */
/**
 * One value of a root document by its key's ending: an RFC 6570 template (`bridgeTemplate`, a
 * collection's `bridgesQuery`), the patch format a kind's items accept (`bridgeAcceptPatch`: a
 * media type), else a URL.
 */
function rootValueSchema(key: string): Schema {
  if (/(_t|T)emplate$|(_q|Q)uery$/.test(key)) return { type: "string", format: "uri-template", readOnly: true };
  if (/(_a|A)ccept_?(p|P)atch$/.test(key)) return { type: "string", const: MERGE_PATCH, description: "The patch format the kind's items accept (a media type)", readOnly: true };
  return { type: "string", format: "uri", readOnly: true };
}

function rootSchema(example: Record<string, unknown>, title: string): Schema {
  const properties: Record<string, Schema> = {};
  for (const [k, v] of Object.entries(example)) {
    if (isRecord(v)) properties[k] = rootSchema(v, "");
    else if (k === "version") properties[k] = { type: "string" };
    else properties[k] = rootValueSchema(k);
  }
  return { type: "object", ...(title ? { description: title } : {}), required: Object.keys(example), properties };
}

/** A message's POST-only (IMMUTABLE) fields, which a PUT's body may carry and the gateway ignores (transcode.ts). */
const postOnly = (m: MessageInfo) => m.fields.filter((f) => !f.internal && f.behaviors.has("IMMUTABLE")).map((f) => f.name);
const replaceName = (m: MessageInfo) => `${m.fullName}.Replace`;

/**
 * A PUT's body: the item's schema, but its POST-only fields are neither required nor checked
 * (a PUT's value of one is ignored and the item keeps its own), as the gateway takes it.
 */
function replaceSchema(m: MessageInfo): Schema {
  const s = messageSchema(m);
  const kept = postOnly(m);
  const properties: Schema = { ...objectAt(s["properties"]) };
  for (const name of kept) properties[name] = { description: "Accepted in POST only: a PUT's value is ignored, and the item keeps its own." };
  const named = s["required"];
  const required = (Array.isArray(named) ? named : []).filter((n) => !kept.includes(n));
  const { required: _all, ...rest } = s;
  return { ...rest, properties, ...(required.length > 0 ? { required } : {}) };
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
    if (r.method === "PUT" && r.bodyField?.message && postOnly(r.bodyField.message).length > 0) out[replaceName(r.bodyField.message)] = replaceSchema(r.bodyField.message);
  }
  out["Error"] = {
    type: "object",
    description: "The body of every error answer.",
    required: ["message", "code"],
    properties: {
      message: { type: "string", description: "What went wrong, for a person" },
      code: { type: "integer", description: "The HTTP status code" },
      violations: {
        type: "array",
        description: "Each field that was refused (400)",
        items: { type: "object", required: ["property", "message"], properties: { property: { type: "string" }, message: { type: "string" } } },
      },
      requestId: { type: "string", description: "The request's id, also in the X-Request-Id header and the logs" },
    },
  };
  out["Token"] = {
    type: "object",
    description: "A token: send `key` as X-Auth-Token, or as `Authorization: Bearer <key>`.",
    required: ["key", "expires"],
    properties: { key: { type: "string" }, expires: { type: "string", format: "date-time" } },
  };
  return out;
}

/** Error answers, shared by every operation (components.responses), by status. */
const ERRORS: Record<string, { description: string; message: string; headers?: Record<string, Schema> }> = {
  "400": { description: "Bad input: malformed JSON, a wrong type or value (violations name each field)", message: "Validation error(s) found" },
  "401": {
    description: "No valid token (or, at /login, wrong credentials)",
    message: "A valid token is required",
    headers: { "WWW-Authenticate": { description: "`Bearer realm=\"vnm\"` (at /login: `Basic realm=\"vnm\"`)", schema: { type: "string" } } },
  },
  "403": { description: "Not allowed for this caller", message: "Only administrators may do this" },
  "404": { description: "No such item (or another tenant's), or a path that names nothing", message: `There is no Bridge with ID ${EXAMPLE_ID}.` },
  "406": { description: "No acceptable media type", message: "No acceptable media type" },
  "409": { description: "Taken, or still in use", message: `A Bridge with ID ${EXAMPLE_ID} already exists.` },
  "412": { description: "If-Match names no current tag of the item (or If-None-Match names it)", message: "Precondition failed", headers: { ETag: { description: "The item's current tag", schema: { type: "string" } } } },
  "410": { description: "Last-Event-ID names an event this feed cannot resume after (never given, or no longer kept): list again, then follow without it", message: "The events after that Last-Event-ID are no longer kept; list again, then follow without it" },
  "413": {
    description: "The body is larger than the gateway takes (VNM_BODY_LIMIT bytes, 1 MiB by default), before or after its content coding; the connection closes",
    message: "Request body is larger than the limit of 1048576 bytes",
  },
  "415": {
    description: "Unsupported Content-Type (for a PATCH: not a JSON Merge Patch)",
    message: "Unsupported Content-Type",
    headers: { "Accept-Patch": { description: "On a PATCH: the patch format accepted, `application/merge-patch+json`", schema: { type: "string" } } },
  },
  "429": { description: "Too many requests for this token, or login attempts", message: "Too many requests for this token; slow down", headers: { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } } },
  "503": {
    description: "A backing service is unavailable (it is named)",
    message: "The bridge service is unavailable; try again later",
    headers: { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } },
  },
  "504": { description: "A backing service did not answer in time", message: "The bridge service did not answer in time", headers: { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } } },
};

function errorResponses(): Record<string, Schema> {
  return Object.fromEntries(
    Object.entries(ERRORS).map(([code, e]) => [
      `E${code}`,
      {
        description: e.description,
        ...(e.headers ? { headers: e.headers } : {}),
        content: { [ERROR_TYPE]: { schema: { $ref: "#/components/schemas/Error" }, example: { message: e.message, code: Number(code), requestId: "c0ffee00-0000-4000-8000-000000000001" } } },
      },
    ]),
  );
}

const errors = (...codes: string[]) => Object.fromEntries(codes.map((c) => [c, { $ref: `#/components/responses/E${c}` }]));

/** The vendor type and plain JSON, each with the same schema and example. */
/** A body's content: its vendor types (the main one, then any alias) and JSON, each with the same schema. */
function content(types: string | string[], schema: Schema, example: unknown): Schema {
  const all = [...(Array.isArray(types) ? types : [types]), JSON_TYPE];
  return Object.fromEntries(all.map((t) => [t, { schema, example }]));
}

const ETAG = { ETag: { description: "The item's entity tag, for If-Match and If-None-Match", schema: { type: "string" } } };

/** The operation id: the RPC's name in lower camel case, with its domain when another RPC shares it. */
function operationIds(catalog: Catalog): Map<Route, string> {
  const count = new Map<string, number>();
  for (const r of catalog.routes) count.set(r.rpc, (count.get(r.rpc) ?? 0) + 1);
  const out = new Map<Route, string>();
  const used = new Set<string>();
  for (const r of catalog.routes) {
    const base = r.rpc[0]!.toLowerCase() + r.rpc.slice(1);
    let id = base;
    // An RPC served at two paths: the second one's id says its path.
    for (let n = 2; used.has(id); n++) id = `${base}${n}`;
    used.add(id);
    out.set(r, id);
  }
  return out;
}

/** The rules of a field that its filter's value meets too (the list checks it): what it is, not its lengths or ranges. */
const FILTER_FORMATS = new Set(["uuid", "ipv4", "ipv6", "ip", "[vnm.api.mac]"]);

/** A filter's schema: its field's type, with the format (a UUID, an address) that its value must have. */
function filterSchema(f: FieldInfo): Schema {
  const rules = Object.entries(objectAt(f.rules?.["string"]) ?? {}).filter(([k]) => FILTER_FORMATS.has(k));
  return { ...scalarSchema(f), ...keywords(Object.fromEntries(rules), STRING_RULES) };
}

function parameterDescription(f: FieldInfo, where: "path" | "query"): string | undefined {
  if (f.comment) return f.comment.replace(/\s*\n\s*/g, " ");
  if (f.tenantFilter) return "Only the items of this tenant (a non-admin sees only its own anyway)";
  if (where === "path") return f.name === "id" ? "The item's id" : `\`${f.name}\`, as in the item's \`uri\``;
  return undefined;
}

/** Who may call a route, from its kind's tenancy (unless its comment says it already). */
function access(route: Route, kinds: Map<string, KindInfo>, said: string): string | undefined {
  if (route.shape.kind === "empty" && route.method !== "DELETE") return undefined;
  const item = route.shape.kind === "empty" ? undefined : route.shape.item;
  const kind = item ? kinds.get(item.fullName) : [...kinds.values()].find((k) => k.service === route.service && k.rpcs.delete === route.rpc);
  if (!kind || /admins only/i.test(said) || /admins only/i.test(route.comment ?? "")) return undefined;
  if (kind.tenancy === "admin") return "Admins only.";
  // A kind under another follows the nearest one above it that names a tenant (a bridge).
  const byKind = (name?: string) => [...kinds.values()].find((k) => k.kind === name);
  let owner = byKind(kind.parent);
  while (owner && !owner.resource.tenantField) owner = byKind(owner.parent);
  const whose = kind.tenancy === "own" || !owner ? "their tenant's items" : `what is under their tenant's ${owner.resource.displayName.toLowerCase()}s`;
  return route.method === "GET" ? `Admins read every tenant's; tenant admins and users ${whose}.` : `Admins, and tenant admins for ${whose}; tenant users may not (403).`;
}

function operation(route: Route, id: string, names: Map<string, string>, kinds: Map<string, KindInfo>): Schema {
  const params = route.segments.flatMap((s) => {
    if (!("variable" in s)) return [];
    const f = route.request.byName.get(s.variable)!;
    return [{ name: names.get(s.variable) ?? s.variable, in: "path", required: true, description: parameterDescription(f, "path"), schema: scalarSchema(f) }];
  });
  const query: Schema[] = [...route.queryFields.values()].map((f) => {
    const schema = f.name === "limit" ? { type: "integer", minimum: 1, maximum: 1000 } : { ...scalarSchema(f), ...valueRules(f.rules) };
    const p: Schema = { name: f.name, in: "query", required: false, schema };
    const d = parameterDescription(f, "query") ?? (f.name === "marker" ? "The id of the last item already returned: the page after it" : undefined);
    if (d) p["description"] = d;
    return p;
  });
  for (const f of listFilters(route).values()) {
    query.push({ name: f.name, in: "query", required: false, description: `A filter: only the items whose \`${f.name}\` equals this value`, schema: filterSchema(f) });
  }
  if (route.bodyField) query.push(FIELD_VALIDATION);
  // One parameter of the components, named by every write: Prism (the conformance suite's proxy)
  // checks a request some 25% slower when each operation carries its own copy.
  if (route.method !== "GET") query.push({ $ref: "#/components/parameters/DryRun" });
  const headers: Schema[] = [];
  if (route.method === "GET" && route.shape.kind === "item") headers.push({ $ref: "#/components/parameters/IfNoneMatch" });
  if (route.method === "PUT" || route.method === "DELETE") headers.push({ $ref: "#/components/parameters/IfMatch" }, { $ref: "#/components/parameters/IfNoneMatch" });
  const write = route.method !== "GET";
  const responses: Record<string, Schema> = errors("400", "401", "403", "404", "406", ...(write ? ["409"] : []), ...(route.method === "PUT" || route.method === "DELETE" ? ["412"] : []), ...(route.bodyField ? ["413", "415"] : []), "429", "503", "504");
  if (route.shape.kind === "empty") responses["204"] = { description: "Done" };
  else if (route.shape.kind === "item") {
    const item = route.shape.item;
    const body = content([item.resource!.mediaType, ...item.resource!.aliasMediaTypes].map(vendor), ref(item), exampleOf(item, "response"));
    if (route.method === "POST") {
      responses["201"] = {
        description: "Created: the new item",
        headers: { Location: { description: "The new item's URL", schema: { type: "string", format: "uri" } }, ...ETAG },
        content: body,
      };
    } else responses["200"] = { description: "The item", headers: ETAG, content: body };
    if (route.method === "GET") responses["304"] = { description: "Not modified: If-None-Match names the item's tag", headers: ETAG };
  } else {
    const item = route.shape.item;
    responses["200"] = {
      description: "The collection",
      ...(query.some((q) => q["name"] === "limit")
        ? { headers: { Link: { description: 'With `limit`: `<url>; rel="next"` while more items follow', schema: { type: "string" } } } }
        : {}),
      content: content([item.resource!.collectionMediaType, ...item.resource!.aliasCollectionMediaTypes].map(vendor), { type: "array", items: ref(item) }, [exampleOf(item, "response")]),
    };
  }
  const { summary, description } = split(route.comment);
  const who = access(route, kinds, description ?? "");
  const op: Schema = {
    operationId: id,
    summary: summary ?? `${route.rpc.replace(/([a-z])([A-Z])/g, "$1 $2")}`,
    ...(description || who ? { description: [description, who].filter(Boolean).join(" ") } : {}),
    tags: [route.domain],
    parameters: [...params, ...query, ...headers],
    responses,
  };
  const body = route.bodyField?.message;
  if (body) {
    const bodySchema = route.method === "PUT" && postOnly(body).length > 0 ? { $ref: `#/components/schemas/${replaceName(body)}` } : ref(body);
    const types = body.resource ? [body.resource.mediaType, ...body.resource.aliasMediaTypes] : [""];
    op["requestBody"] = { required: true, content: content(types.map(vendor), bodySchema, exampleOf(body, "request")) };
  }
  return op;
}

/** ?fieldValidation= on every write with a body (docs/decisions.md). */
const FIELD_VALIDATION: Schema = {
  name: "fieldValidation",
  in: "query",
  required: false,
  description: "Unknown fields in the body: `Warn` (the default) ignores them and names each in a `Warning: 299` header, `Strict` refuses them (400 naming each), `Ignore` says nothing",
  schema: { type: "string", enum: ["Ignore", "Warn", "Strict"], default: "Warn" },
};

/** ?dryRun= on every write (docs/api.md, "Dry runs"). */
const DRY_RUN: Schema = {
  name: "dryRun",
  in: "query",
  required: false,
  description:
    "`All`: a dry run. Every check of the write runs (validation, references, access, quotas, uniqueness, If-Match) and the answer is the one the write would get, status, body and headers, but nothing is stored, announced on /events, or counted against a quota. Any other value is a 400",
  schema: { type: "string", enum: ["All"] },
};

/** PATCH beside an item's PUT: a JSON Merge Patch, written as that PUT (gateway/src/patch.ts). */
/**
 * A JSON Merge Patch of an item: any of its fields a PUT takes, each optional, `null` removing
 * it; the other fields of a representation (read-only ones a client sends back) are ignored.
 */
function mergePatchSchema(m: MessageInfo): Schema {
  const properties = Object.fromEntries(writableFields(m, "update").map((f) => [f.name, nullable(accepted(ruledSchema(f)))]));
  return { type: "object", description: `Any of the ${m.name}'s writable fields; null removes one`, properties };
}

function patchOperation(put: Schema, item: MessageInfo): Schema {
  const body = Object.values(objectAt(objectAt(put["requestBody"])?.["content"]) ?? {})[0];
  const example = Object.fromEntries(Object.entries(objectAt(memberOf(body, "example")) ?? {}).slice(0, 1));
  return {
    ...put,
    operationId: String(put["operationId"]).replace(/^update/, "patch"),
    summary: `${String(put["summary"])} (only the fields named)`,
    description:
      "A JSON Merge Patch (RFC 7396): the fields it names replace the item's, `null` removes one, the rest stay. Validated and written as the PUT beside it, with the same answers.",
    requestBody: { required: true, content: { [MERGE_PATCH]: { schema: mergePatchSchema(item), example } } },
  };
}

/** GET / and the other root documents. */
function rootOperation(catalog: Catalog, which?: RootDocumentInfo): Schema {
  const example = objectAt(JSON.parse(rootDocument(catalog, EXAMPLE_BASE, which))) ?? {};
  const type = vendor(which ? which.mediaType : ROOT_TYPE);
  const what = which ? `the ${which.name} family's root document` : "the root document";
  return {
    get: {
      operationId: which ? `get${which.name[0]!.toUpperCase()}${which.name.slice(1)}Root` : "getRoot",
      summary: which ? `Get the ${which.name} root document` : "Get the root document",
      description: `The URL of every top-level collection of ${what} and a URI template for its items${which ? "" : ", and the URL of each other root document"}.`,
      tags: ["api"],
      responses: { "200": { description: `The ${what}`, content: content(type, rootSchema(example, `The ${what}`), example) }, ...errors("401", "405", "406", "429") },
    },
  };
}

/** POST /logout (this token) and POST /logout/all (every token of the user). */
function logoutPaths(): Record<string, Schema> {
  const logout = (operationId: string, summary: string, description: string) => ({
    post: { operationId, summary, description, tags: ["api"], responses: { "204": { description: "Done" }, ...errors("401", "503") } },
  });
  return {
    "/logout": logout(
      "logout",
      "Log out",
      "Ends the token the request carries on every gateway within a second, and the /events streams open with it. The user's other tokens (another tab, the CLI) go on: `POST /logout/all` ends them all.",
    ),
    "/logout/all": logout("logoutEverywhere", "Log out everywhere", "Ends every token of the caller's user issued so far on every gateway within a second, and their open /events streams."),
  };
}

/** The gateway's own paths: root documents, login, logout, the change feed, the probes. */
function gatewayPaths(catalog: Catalog): Record<string, Schema> {
  const token = { key: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJl", expires: "2027-01-01T12:00:00.000Z" };
  const probe = (id: string, summary: string, description: string, type: string, schema: Schema, example: unknown) => ({
    get: { operationId: id, summary, description, tags: ["operations"], security: [], responses: { "200": { description: summary, content: { [type]: { schema, example } } } } },
  });
  const paths: Record<string, Schema> = { "/": rootOperation(catalog) };
  for (const d of catalog.rootDocuments) paths[d.path] = rootOperation(catalog, d);
  paths["/login"] = {
    post: {
      operationId: "login",
      summary: "Log in",
      description:
        "HTTP Basic credentials give a token (also in the X-Auth-Token header, and for a client that is no browser, no Origin and no Sec-Fetch-*, in an HttpOnly, SameSite=Strict sessionId cookie; no cookie is read). `X-Auth-Project` names the tenant an admin acts in. Attempts are limited per user name and source, with back-off.",
      tags: ["api"],
      security: [{ basic: [] }],
      parameters: [{ name: "X-Auth-Project", in: "header", required: false, description: "The tenant to act in", schema: { type: "string" } }],
      responses: {
        "200": {
          description: "The token",
          headers: { "X-Auth-Token": { description: "The token's key", schema: { type: "string" } } },
          content: content(vendor(TOKEN_TYPE), { $ref: "#/components/schemas/Token" }, token),
        },
        ...errors("401", "406", "429", "503"),
      },
    },
  };
  Object.assign(paths, logoutPaths());
  paths["/events"] = {
    get: {
      operationId: "events",
      summary: "Follow changes",
      description:
        "Server-Sent Events: `event: created|updated|deleted`, `id: <event id>`, `data: {\"kind\", \"id\", \"uri\"}`, for every item the caller may see. `Last-Event-ID` (or `?lastEventId=`) resumes after that event. An administrator's event ids are the bus's sequence numbers; anyone else's are opaque (22 characters), so they say nothing of the changes the caller does not see.",
      tags: ["api"],
      parameters: [
        { name: "Last-Event-ID", in: "header", required: false, description: "Resume after this event", schema: { type: "string", pattern: "^([0-9]+|[A-Za-z0-9_-]{22})$" } },
        { name: "lastEventId", in: "query", required: false, description: "Resume after this event (for clients that cannot set the header)", schema: { type: "string", pattern: "^([0-9]+|[A-Za-z0-9_-]{22})$" } },
      ],
      responses: {
        "200": {
          description: "The stream of changes",
          content: { "text/event-stream": { schema: { type: "string" }, example: `event: created\nid: 42\ndata: {"kind":"bridge.Bridge","id":"${EXAMPLE_ID}","uri":"${EXAMPLE_BASE}/bridges/${EXAMPLE_ID}"}\n\n` } },
        },
        ...errors("400", "401", "405", "406", "410", "429", "503"),
      },
    },
  };
  const checks = { type: "object", additionalProperties: { type: "string", enum: ["ok", "unavailable"] } };
  Object.assign(paths, {
    "/healthz": probe("healthz", "Process up", "200 while the gateway's process answers.", "application/json", { type: "object", properties: { status: { type: "string", enum: ["ok"] } } }, { status: "ok" }),
    "/readyz": probe(
      "readyz",
      "Ready to serve",
      "200 `ok`; 200 `degraded` naming each service, the cache or the bus that does not answer; 503 when no service answers.",
      "application/json",
      { type: "object", properties: { status: { type: "string", enum: ["ok", "degraded", "unavailable"] }, checks, degraded: { type: "array", items: { type: "string" } } } },
      { status: "ok", checks: { bridge: "ok", cache: "ok", bus: "ok" }, degraded: [] },
    ),
    "/metrics": probe("metrics", "Prometheus metrics", "Prometheus text exposition: requests by route template, gRPC calls, the cache, open event streams, Node's own.", "text/plain", { type: "string" }, "vnm_http_requests_total{route=\"/bridges\",method=\"GET\",status=\"200\",part=\"gateway\"} 1\n"),
    "/openapi.json": probe("openapi", "This description", "The OpenAPI 3.1 description of the API, derived from the proto files.", "application/json", { type: "object" }, { openapi: "3.1.0" }),
  });
  const readyz = objectAt(paths["/readyz"]?.["get"]) ?? {};
  readyz["responses"] = {
    ...objectAt(readyz["responses"]),
    "503": { description: "No service answers: this gateway is cut off", content: { "application/json": { schema: { type: "object" }, example: { status: "unavailable", checks: { bridge: "unavailable" }, degraded: ["bridge"] } } } },
  };
  return paths;
}

const DESCRIPTION = `Virtual network management: bridges, their DHCP and MAC tables, load balancing, routing, tunnels and VTEPs, QoS, tracing, users, and the /compat family.

**Authentication.** \`POST /login\` with HTTP Basic credentials returns a token; send it as \`X-Auth-Token\` or \`Authorization: Bearer\`. Every path needs one but \`/login\` and the probes.

**Media types.** Items and collections have vendor media types (\`application/vnd.org.service.Bridge-v4+json\`, \`...collection.Bridge-v4+json\`); \`application/json\` is accepted too. Write bodies in the item's type.

**Errors** carry \`{"message", "code", "violations"?, "requestId"}\` as \`${ERROR_TYPE}\`.

**Tenancy.** Admins see everything; tenant admins read and write their tenant's items, tenant users read them; another tenant's item is a 404.`;

export function openApi(catalog: Catalog): string {
  const paths: Record<string, Record<string, Schema>> = {};
  // Paths that differ only in their variables' names are one path: the first one's names.
  const byShape = new Map<string, string>();
  const ids = operationIds(catalog);
  const kindsByMessage = new Map([...catalog.kinds.values()].map((k) => [k.message.fullName, k]));
  for (const r of catalog.routes) {
    const shape = templateShape(r.template);
    const key = byShape.get(shape) ?? r.template;
    byShape.set(shape, key);
    const theirs = linkFields(key);
    const names = new Map(linkFields(r.template).map((v, i) => [v, theirs[i]!]));
    paths[key] ??= {};
    const op = operation(r, ids.get(r)!, names, kindsByMessage);
    paths[key]![r.method.toLowerCase()] = op;
    if (r.method === "PUT" && op["requestBody"] && r.bodyField?.message) paths[key]!["patch"] = patchOperation(op, r.bodyField.message);
  }
  const tags = [
    { name: "api", description: "The root documents, login, logout and the change feed." },
    ...[...new Set(catalog.routes.map((r) => r.domain))].map((d) => ({
      name: d,
      description: catalog.services
        .filter((s) => s.domain === d && s.comment)
        .map((s) => s.comment!.replace(/\s*\n\s*/g, " "))
        .join(" "),
    })),
    { name: "operations", description: "Probes, metrics and this description; no token needed." },
  ];
  return JSON.stringify({
    openapi: "3.1.0",
    info: { title: "vnm: virtual network management", version: "v5.0", description: DESCRIPTION },
    servers: [{ url: "/", description: "The gateway this description was fetched from" }],
    security: [{ token: [] }, { bearer: [] }],
    tags,
    // A collection before its items, each family together: in path order.
    paths: { ...gatewayPaths(catalog), ...Object.fromEntries(Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) },
    components: {
      schemas: schemas(catalog),
      responses: {
        ...errorResponses(),
        E405: { description: "Method not allowed on this path", headers: { Allow: { description: "The methods allowed", schema: { type: "string" } } }, content: { [ERROR_TYPE]: { schema: { $ref: "#/components/schemas/Error" } } } },
      },
      parameters: {
        IfMatch: { name: "If-Match", in: "header", required: false, description: "Only if the item's tag is one of these (`*`: if it exists); else 412", schema: { type: "string" } },
        IfNoneMatch: { name: "If-None-Match", in: "header", required: false, description: "On GET: 304 when the tag matches. On PUT and DELETE: 412 when it names the item's tag (`*`: when it exists)", schema: { type: "string" } },
        DryRun: DRY_RUN,
      },
      securitySchemes: {
        token: { type: "apiKey", in: "header", name: "X-Auth-Token", description: "The `key` that POST /login returned" },
        bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "The same token as `Authorization: Bearer <key>`" },
        basic: { type: "http", scheme: "basic", description: "User name and password, at POST /login only" },
      },
    },
  });
}
