// Root documents: the main one (Application-v5) and any other a proto declares (the compat
// family's, compat.Compat-v1 at /compat), each with an absolute URL for every top-level
// collection and an item template for each kind it lists (vnm.api.resource root_*). Dotted
// keys ("load_balancer.pools") nest; the main document links to the others by their name.
import type { Catalog, RootDocumentInfo } from "@vnm/kit";

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
    if (r.rootTemplate) put(doc, r.rootTemplate, `${base}${r.rootPath}/{id}`);
  }
  return JSON.stringify(doc);
}
