// Root documents: the main one (Application-v5) and any other a proto declares (the compat
// family's, compat.Compat-v1 at /compat), each with an absolute URL for every top-level
// collection and an item template for each kind it lists (vnm.api.resource root_*), and a
// query template naming the parameters each collection takes (its paging, tenant and field
// filters: RFC 6570's `{?name,...}`). Dotted keys ("load_balancer.pools") nest; the main document
// links to the others by their name.
import type { Catalog, ResourceInfo, RootDocumentInfo } from "@vnm/kit";
import { listFilters } from "./lists.ts";

/** Sets a dotted key in a nested object. */
function put(doc: Record<string, unknown>, key: string, value: string): void {
  const parts = key.split(".");
  let at = doc;
  for (const p of parts.slice(0, -1)) {
    at[p] ??= {};
    at = at[p] as Record<string, unknown>;
  }
  at[parts[parts.length - 1]!] = value;
}

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
  const key = r.rootTemplate?.includes("_") ? `${r.rootCollection}_query` : `${r.rootCollection}Query`;
  return [key, `${url}{?${names.join(",")}}`];
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
  }
  return JSON.stringify(doc);
}
