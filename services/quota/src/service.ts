// The quota service: each tenant's limits per kind it creates (the defaults of
// VNM_QUOTA_DEFAULTS with the tenant's overrides), and its usage, counted by the services that
// hold the items. The limits are enforced in every service's create (the kit's quota.ts).
import {
  addressVariable,
  ApiError,
  type CallContext,
  checkConditions,
  PATCH_KEY, type CountedKind, countedKinds, loadConfig, QUOTA_SERVICE, type ServiceContext, type ServiceSpec, USAGE_SERVICE, type Violation } from "@vnm/kit";
import type pg from "pg";
import { migrations } from "./migrations.ts";

type Limits = Record<string, number>;
type Row = { tenant_id: string; seq: string; limits: Limits };

const MAX_PAGE = 1000;

/** Limits as a body or the configuration gives them: an object of known collections, each an integer of -1 (unlimited) or more. */
function checkLimits(value: unknown, known: ReadonlySet<string>, where: string): { limits: Limits; violations: Violation[] } {
  const limits: Limits = {};
  const violations: Violation[] = [];
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { limits, violations: [{ property: where, message: "must be an object of collection names and limits" }] };
  for (const [k, v] of Object.entries(value)) {
    if (!known.has(k)) violations.push({ property: `${where}.${k}`, message: "is no collection with a quota" });
    else if (typeof v !== "number" || !Number.isInteger(v) || v < -1 || v > 2_147_483_647) violations.push({ property: `${where}.${k}`, message: "must be an integer, -1 (unlimited) or more" });
    else limits[k] = v;
  }
  return { limits, violations };
}

/** VNM_QUOTA_DEFAULTS: a JSON object, collection -> limit; a collection it leaves out is unlimited. */
export function defaultsOf(env: NodeJS.ProcessEnv, counted: CountedKind[]): Limits {
  const known = new Set(counted.map((c) => c.collection));
  const cfg = loadConfig(
    {
      defaults: {
        env: "VNM_QUOTA_DEFAULTS",
        default: "{}",
        description: "each collection's default limit, as a JSON object",
        parse: (raw: string) => {
          const { limits, violations } = checkLimits(JSON.parse(raw), known, "VNM_QUOTA_DEFAULTS");
          if (violations.length > 0) throw new Error(violations.map((v) => `${v.property} ${v.message}`).join("; "));
          return limits;
        },
      },
    },
    env,
  );
  return Object.fromEntries(counted.map((c) => [c.collection, cfg.defaults[c.collection] ?? -1]));
}

const tenantOf = (req: { tenantId?: unknown }): string => {
  const t = req.tenantId;
  if (typeof t !== "string" || t === "") throw ApiError.invalid([{ property: "tenantId", message: "is required" }]);
  return t;
};

const adminOnly = (ctx: CallContext) => {
  if (ctx.identity?.role !== "admin") throw ApiError.forbidden("Only administrators may change quotas");
};

/** A PUT's `limits` (JSON text of an object): the limits it names, or a 400 naming each bad one. */
function sentLimits(sent: unknown, known: ReadonlySet<string>): Limits {
  let parsed: unknown;
  try {
    parsed = typeof sent === "string" && sent !== "" ? JSON.parse(sent) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined) throw ApiError.invalid([{ property: "limits", message: "is required: an object of collection names and limits" }]);
  const { limits, violations } = checkLimits(parsed, known, "limits");
  if (violations.length > 0) throw ApiError.invalid(violations);
  return limits;
}

const changed = (tenant: string) => ({ kind: "Quota", event: "updated" as const, id: tenant, path: `/quotas/${encodeURIComponent(tenant)}`, tenantId: tenant });

/** The overrides table, the defaults and the usage counts of the services that hold the items. */
class Quotas {
  private readonly svc: ServiceContext;
  private readonly counted: CountedKind[];
  readonly known: ReadonlySet<string>;
  private readonly domains: string[];
  readonly defaults: Limits;

  constructor(svc: ServiceContext) {
    this.svc = svc;
    this.counted = countedKinds(svc.catalog);
    this.known = new Set(this.counted.map((c) => c.collection));
    // The domains deployed here (their address given): one not deployed holds nothing.
    this.domains = [...new Set(this.counted.map((c) => c.domain))].filter((d) => svc.env[addressVariable(d)]).sort();
    this.defaults = defaultsOf(svc.env, this.counted);
  }

  merged(row: Row | undefined): Limits {
    return { ...this.defaults, ...(row?.limits ?? {}) };
  }

  async row(q: pg.Pool | pg.PoolClient, tenant: string, lock = ""): Promise<Row | undefined> {
    return (await q.query<Row>(`SELECT * FROM quota_overrides WHERE tenant_id = $1${lock}`, [tenant])).rows[0];
  }

  /** The tenant's usage: every domain holding counted kinds asked at its own address. */
  async usage(tenant: string): Promise<Limits> {
    const used: Limits = Object.fromEntries(this.counted.map((c) => [c.collection, 0]));
    const answers = await Promise.all(this.domains.map((d) => this.svc.call(USAGE_SERVICE, "CountUsage", { tenantId: tenant }, d)));
    for (const a of answers) {
      const counts = Array.isArray(a["counts"]) ? (a["counts"] as { collection?: string; count?: string | number }[]) : [];
      for (const c of counts) if (c.collection && this.known.has(c.collection)) used[c.collection] = Number(c.count ?? 0);
    }
    return used;
  }

  async quota(tenant: string, row: Row | undefined) {
    return { tenantId: tenant, limits: JSON.stringify(this.merged(row)), used: JSON.stringify(await this.usage(tenant)) };
  }

  /** The quota's entity tag as its GET answers it now (the gateway's ETag), for a write's If-Match and If-None-Match. */
  async etag(tenant: string, row: Row | undefined): Promise<string> {
    return this.svc.resources.answerTag(QUOTA_SERVICE, "GetQuota", await this.quota(tenant, row));
  }

  /** Merges `limits` into the tenant's overrides; what equals its default is no override (no row when nothing is left). */
  async update(ctx: CallContext, tenant: string, limits: Limits): Promise<Row | undefined> {
    return this.svc.store.tx(ctx, async (q, emit) => {
      // Two writes of one tenant's quotas, with or without overrides, one after the other.
      await q.query("SELECT pg_advisory_xact_lock(hashtext('quota'), hashtext($1))", [tenant]);
      const before = await this.row(q, tenant, " FOR UPDATE");
      await checkConditions(ctx, () => this.etag(tenant, before));
      const next = Object.fromEntries(Object.entries({ ...(before?.limits ?? {}), ...limits }).filter(([k, v]) => this.defaults[k] !== v));
      if (JSON.stringify(next) === JSON.stringify(before?.limits ?? {})) return before;
      let after: Row | undefined;
      if (Object.keys(next).length === 0) await q.query("DELETE FROM quota_overrides WHERE tenant_id = $1", [tenant]);
      else {
        const sql = "INSERT INTO quota_overrides (tenant_id, limits) VALUES ($1, $2) ON CONFLICT (tenant_id) DO UPDATE SET limits = EXCLUDED.limits RETURNING *";
        after = (await q.query<Row>(sql, [tenant, JSON.stringify(next)])).rows[0];
      }
      emit(changed(tenant));
      return after;
    });
  }

  /** Tenants with overrides, in the order they got them, a page at a time (the marker a tenantId). */
  async list(req: { limit?: unknown; marker?: unknown }) {
    const limit = req.limit === undefined ? undefined : Number(req.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)) {
      throw ApiError.invalid([{ property: "limit", message: `must be between 1 and ${MAX_PAGE}` }]);
    }
    const params: unknown[] = [];
    let where = "";
    if (typeof req.marker === "string" && req.marker !== "") {
      const at = await this.row(this.svc.store.pool, req.marker);
      if (!at) throw ApiError.invalid([{ property: "marker", message: "must be the tenantId of an item of this list" }]);
      params.push(at.seq);
      where = " WHERE seq > $1";
    }
    const rows = (await this.svc.store.query<Row>(`SELECT * FROM quota_overrides${where} ORDER BY seq${limit ? ` LIMIT ${limit + 1}` : ""}`, params)).rows;
    const more = limit !== undefined && rows.length > limit;
    if (more) rows.length = limit;
    // A list shows the limits only: its usage would ask every service for every tenant.
    const quotas = rows.map((r) => ({ tenantId: r.tenant_id, limits: JSON.stringify(this.merged(r)) }));
    return more ? { quotas, next_marker: rows[rows.length - 1]!.tenant_id } : { quotas };
  }
}

function quotaHandlers(svc: ServiceContext) {
  const quotas = new Quotas(svc);
  const { pool } = svc.store;
  return {
    [QUOTA_SERVICE]: {
      GetLimits: async (req: { tenantId?: unknown }) => ({ limits: JSON.stringify(quotas.merged(await quotas.row(pool, tenantOf(req)))) }),
      GetQuota: async (req: { tenantId?: unknown }) => {
        const tenant = tenantOf(req);
        return quotas.quota(tenant, await quotas.row(pool, tenant));
      },
      ListQuotas: (req: { limit?: unknown; marker?: unknown }) => quotas.list(req),
      UpdateQuota: async (req: { tenantId?: unknown; quota?: { limits?: unknown } }, ctx: CallContext) => {
        adminOnly(ctx);
        const tenant = tenantOf(req);
        // A PATCH (a JSON merge patch) merges the limits it names, as a PUT does; one without limits changes nothing.
        const patching = ctx.metadata.get(PATCH_KEY).length > 0;
        const sent = req.quota?.limits;
        const limits = patching && (sent === undefined || sent === "") ? {} : sentLimits(sent, quotas.known);
        const row = await quotas.update(ctx, tenant, limits);
        return quotas.quota(tenant, row);
      },
      DeleteQuota: async (req: { tenantId?: unknown }, ctx: CallContext) => {
        adminOnly(ctx);
        const tenant = tenantOf(req);
        // A tenant without overrides has nothing to restore: 404, as a delete of what is not there.
        await svc.store.tx(ctx, async (q, emit) => {
          const row = await quotas.row(q, tenant, " FOR UPDATE");
          if (!row) throw ApiError.notFound(`Tenant ${tenant} has no quota other than the defaults.`);
          await checkConditions(ctx, () => quotas.etag(tenant, row));
          await q.query("DELETE FROM quota_overrides WHERE tenant_id = $1", [tenant]);
          emit(changed(tenant));
        });
        return {};
      },
    },
  };
}

export const service: ServiceSpec = {
  domain: "quota",
  migrations,
  services: (svc) => quotaHandlers(svc),
};
