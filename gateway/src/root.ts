// Root documents: the main one (Application-v5) and any other a proto declares (the compat
// family's, compat.Compat-v1 at /compat), each with an absolute URL for every top-level
// collection and an item template for each kind it lists (vnm.api.resource root_*), and a
// query template naming the parameters each collection takes (its paging, tenant and field
// filters: RFC 6570's `{?name,...}`), and beside the template of each item that takes a PATCH
// the patch format it accepts (RFC 5789's Accept-Patch: `bridgeAcceptPatch`). Dotted keys
// ("load_balancer.pools") nest; the main document links to the others by their name.
import { type Catalog, isRecord, type ResourceInfo, type RootDocumentInfo, templateShape } from "@vnm/kit";
import { listFilters } from "./lists.ts";
import { MERGE_PATCH } from "./patch.ts";

/** Sets a dotted key in a nested object. */
function put(doc: Record<string, unknown>, key: string, value: string): void {
  const parts = key.split(".");
  let at = doc;
  for (const p of parts.slice(0, -1)) {
    const inner = at[p];
    const next = isRecord(inner) ? inner : {};
    at[p] = next;
    at = next;
  }
  at[parts[parts.length - 1]!] = value;
}

/** Whether a kind's keys are snake_case ("load_balancer.pool_template"), else camelCase. */
const snakeCase = (r: ResourceInfo) => r.rootTemplate?.includes("_") ?? false;

/**
 * The query template of a kind's collection ("<url>{?tenant_id,limit,marker,name,...}") under a
 * key in the document's own style ("bridgesQuery", "load_balancer.pools_query"); undefined when
 * the collection takes no parameter.
 */
function queryTemplate(catalog: Catalog, r: ResourceInfo, url: string): [string, string] | undefined {
  const list = catalog.routes.find((route) => route.method === "GET" && route.template === r.rootPath && route.shape.kind === "collection");
  if (!list || !r.rootCollection) return undefined;
  const names = [...list.queryFields.keys(), ...listFilters(list).keys()];
  if (names.length === 0) return undefined;
  const key = snakeCase(r) ? `${r.rootCollection}_query` : `${r.rootCollection}Query`;
  return [key, `${url}{?${names.join(",")}}`];
}

/**
 * The patch format each kind's items accept, under a key beside its template ("bridgeAcceptPatch",
 * "load_balancer.pool_accept_patch"): items that take a PUT take a PATCH (patch.ts). Worked out
 * once per catalog: the document itself is made per request.
 */
const patchKeysOf = new WeakMap<Catalog, Map<ResourceInfo, [string, string]>>();
function patchKeys(catalog: Catalog): Map<ResourceInfo, [string, string]> {
  let keys = patchKeysOf.get(catalog);
  if (keys) return keys;
  const putShapes = new Set(catalog.routes.filter((route) => route.method === "PUT").map((route) => templateShape(route.template)));
  keys = new Map();
  for (const m of catalog.resources) {
    const r = m.resource!;
    if (!r.rootTemplate || !putShapes.has(templateShape(`${r.rootPath}/{id}`))) continue;
    const stem = r.rootTemplate.replace(/_?[Tt]emplate$/, "");
    keys.set(r, [snakeCase(r) ? `${stem}_accept_patch` : `${stem}AcceptPatch`, MERGE_PATCH]);
  }
  patchKeysOf.set(catalog, keys);
  return keys;
}

export function rootDocument(catalog: Catalog, base: string, which?: RootDocumentInfo): string {
  const doc: Record<string, unknown> = { uri: `${base}${which?.path ?? "/"}` };
  if (!which) {
    doc["version"] = "v5.0";
    for (const other of catalog.rootDocuments) doc[other.name] = base + other.path;
  }
  for (const m of catalog.resources) {
    const r = m.resource!;
    if (!r.rootPath || r.rootDocument !== which?.name) continue;
    if (r.rootCollection) put(doc, r.rootCollection, base + r.rootPath);
    const query = queryTemplate(catalog, r, base + r.rootPath);
    if (query) put(doc, ...query);
    if (r.rootTemplate) put(doc, r.rootTemplate, `${base}${r.rootPath}/{id}`);
    const patch = patchKeys(catalog).get(r);
    if (patch) put(doc, ...patch);
  }
  return JSON.stringify(doc);
}
