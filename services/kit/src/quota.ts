// Quotas: the most items of a kind a tenant may hold (docs/api.md, "Quotas"). The check lives
// here once, for every kind a tenant creates (a top-level kind with a tenant field): inside the
// create's transaction, under a transaction advisory lock on (kind, tenant), the tenant's rows
// are counted (at most `limit` of them read). No counter is kept, so deletes, cascades and
// failed writes leave usage exact by construction, and two creates of one tenant's kind, in any
// replica, run one after the other. The limits are the quota service's (its defaults and the
// tenant's overrides), cached per tenant for QUOTA_CACHE_MS and dropped when it announces a
// change (quota.Quota.updated).
import type { Bus } from "./bus.ts";
import type { Catalog } from "./catalog.ts";
import { assertIdentifier, type Queryable } from "./db.ts";
import { ApiError } from "./errors.ts";
import type { Logger } from "./log.ts";
import { countedKinds } from "./quota-kinds.ts";
import { memberOf } from "./values.ts";

export { type CountedKind, countedKinds, QUOTA_KIND, QUOTA_SERVICE, USAGE_SERVICE } from "./quota-kinds.ts";

/** How long a tenant's limits are used without asking again: a lowered limit applies within this, or at once when the bus brings the change. */
export const QUOTA_CACHE_MS = 2_000;

/** What a create of a counted kind asks before its insert. */
export interface QuotaGuard {
  /** Locks (kind, tenant) for the transaction and refuses (409) when the tenant holds its limit already. */
  check(q: Queryable, at: { kind: string; table: string; tenantColumn: string }, tenant: string): Promise<void>;
}

type Limits = Record<string, number>;

/**
 * The guard of one service, for its kinds `own`. `ask` reads a tenant's limits from the quota
 * service (it throws UNAVAILABLE naming it when it is down: a create of a kind whose limits are
 * not cached is then a 503, since no limit is known); with no quota service configured (`ask`
 * undefined) nothing is limited. The count runs in READ COMMITTED (the kit's transactions): the
 * statement after the lock sees every insert its previous holders committed.
 */
export function quotaGuard(
  catalog: Catalog,
  own: string[],
  opts: { ask?: (tenant: string) => Promise<Record<string, unknown>>; bus: Bus; log: Logger; cacheMs?: number },
): QuotaGuard | undefined {
  const { ask } = opts;
  const byKind = new Map(countedKinds(catalog).filter((c) => own.includes(c.kind)).map((c) => [c.kind, c.collection]));
  // A service holding no kind a tenant creates neither asks nor listens.
  if (!ask || byKind.size === 0) return undefined;
  const cacheMs = opts.cacheMs ?? QUOTA_CACHE_MS;
  const cache = new Map<string, { at: number; limits: Promise<Limits> }>();
  opts.bus.subscribe(["quota.Quota.updated"], (msg) => {
    const tenant = memberOf(msg.data, "tenantId");
    if (typeof tenant === "string") cache.delete(tenant);
    else cache.clear();
  });
  const limitsOf = (tenant: string): Promise<Limits> => {
    const hit = cache.get(tenant);
    if (hit && Date.now() - hit.at < cacheMs) return hit.limits;
    const limits = ask(tenant).then((r) => parseLimits(r["limits"]));
    const entry = { at: Date.now(), limits };
    if (cache.size >= 100_000) cache.clear();
    cache.set(tenant, entry);
    limits.catch(() => {
      if (cache.get(tenant) === entry) cache.delete(tenant);
    });
    return limits;
  };
  return {
    async check(q, at, tenant) {
      const collection = byKind.get(at.kind);
      if (!collection) return;
      const limit = (await limitsOf(tenant))[collection] ?? -1;
      if (limit < 0) return;
      const table = assertIdentifier(at.table);
      const column = assertIdentifier(at.tenantColumn);
      await q.query("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", [at.kind, tenant]);
      const held = Number((await q.query(`SELECT count(*) AS n FROM (SELECT 1 FROM ${table} WHERE ${column} = $1 LIMIT ${limit}) t`, [tenant])).rows[0]?.["n"]);
      if (held < limit) return;
      // Refused: the whole usage, which may be above a lowered limit.
      const used = Number((await q.query(`SELECT count(*) AS n FROM ${table} WHERE ${column} = $1`, [tenant])).rows[0]?.["n"]);
      opts.log.info("quota reached", { kind: at.kind, tenant, limit, used });
      throw new ApiError(ApiError.conflict("").code, `The quota of ${collection} is reached: tenant ${tenant} may hold ${limit} and holds ${used}.`, [
        { property: collection, message: `limit ${limit}, used ${used}` },
      ]);
    },
  };
}

/** Limits as JSON text (the quota service's answer) -> collection -> limit. */
export function parseLimits(text: unknown): Limits {
  if (typeof text !== "string" || text === "") return {};
  const parsed: unknown = JSON.parse(text);
  const out: Limits = {};
  if (typeof parsed !== "object" || parsed === null) return out;
  for (const [k, v] of Object.entries(parsed)) if (typeof v === "number" && Number.isInteger(v)) out[k] = v;
  return out;
}

/** The UsageService's handler a service serves: its counted kinds' rows of a tenant. */
export function usageHandler(catalog: Catalog, resources: { kind(kind: string): { spec: { table: string; tenantColumn?: string } } | undefined }) {
  const counted = countedKinds(catalog).flatMap((c) => {
    const r = resources.kind(c.kind);
    return r?.spec.tenantColumn ? [{ collection: c.collection, table: assertIdentifier(r.spec.table), column: assertIdentifier(r.spec.tenantColumn) }] : [];
  });
  return (q: Queryable) =>
    async (req: { tenantId?: unknown }) => {
      const tenant = typeof req.tenantId === "string" ? req.tenantId : "";
      const counts = [];
      for (const c of counted) {
        const n = (await q.query(`SELECT count(*) AS n FROM ${c.table} WHERE ${c.column} = $1`, [tenant])).rows[0]?.["n"];
        counts.push({ collection: c.collection, count: String(n ?? 0) });
      }
      return { counts };
    };
}
