// The kinds quotas count and the quota service's names: what the catalog (every part, the CLI's
// and the console's bundles included) needs of quotas, with no dependency (quota.ts is the check).
import type { Catalog, KindInfo } from "./catalog.ts";

export const QUOTA_SERVICE = "vnm.quota.v1.QuotaService";
export const USAGE_SERVICE = "vnm.quota.v1.UsageService";
/** The quotas' kind: its items show usage, so any change of a counted kind changes them (Catalog.affected). */
export const QUOTA_KIND = "quota.Quota";


/** A kind that counts against a tenant's quota, and its collection's name in the root document ("bridges"). */
export interface CountedKind {
  kind: string;
  domain: string;
  collection: string;
}

const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** A kind's collection: the root document's key, else its item path's collection segment in camelCase ("/qos_dscp_rules/{id}": qosDscpRules). */
function collectionOf(k: KindInfo): string {
  if (k.resource.rootCollection) return k.resource.rootCollection;
  const statics = k.itemTemplate.split("/").filter((s) => s && !s.startsWith("{"));
  return camel(statics[statics.length - 1] ?? k.resource.name);
}

/**
 * Every kind a tenant creates: top-level (no parent), with its own tenant field that a create
 * names (a chain's rules, whose tenant is read-only, follow their chain and do not count; nor do
 * nested kinds), and a create RPC of its own (a port, created on a router or a bridge, does not).
 */
export function countedKinds(catalog: Pick<Catalog, "kinds">): CountedKind[] {
  return [...catalog.kinds.values()]
    .filter((k) => k.tenancy === "own" && !k.parent && k.rpcs.create && !k.message.byName.get(k.resource.tenantField ?? "")?.behaviors.has("OUTPUT_ONLY"))
    .map((k) => ({ kind: k.kind, domain: k.resource.domain, collection: collectionOf(k) }))
    .sort((a, b) => a.collection.localeCompare(b.collection));
}
