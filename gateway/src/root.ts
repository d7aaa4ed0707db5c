// The root document (Application-v5): an absolute URL for every top-level collection and an
// item template for each kind, as the resources declare them (vnm.api.resource root_*).
import type { Catalog } from "@vnm/kit";

export function rootDocument(catalog: Catalog, base: string): string {
  const doc: Record<string, string> = { uri: `${base}/`, version: "v5.0" };
  for (const m of catalog.resources) {
    const r = m.resource!;
    if (!r.rootPath) continue;
    if (r.rootCollection) doc[r.rootCollection] = base + r.rootPath;
    if (r.rootTemplate) doc[r.rootTemplate] = `${base}${r.rootPath}/{id}`;
  }
  return JSON.stringify(doc);
}
