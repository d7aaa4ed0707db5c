// A top-level list filtered by an id its items hold (a UUID column of the kind's table: its own
// id, or one it refers to) reads an index that starts at that column, never every row
// (docs/decisions.md, "Filters"). For each service, on a schema its own migrations made: the
// query the kind's Resource issues for the filter, as the gateway passes it on (the call's
// filter metadata, the first page of a whole list), planned by Postgres with sequential scans
// priced out (an empty table is otherwise cheapest read whole) and no other condition beside it.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as grpc from "@grpc/grpc-js";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCatalog, type Route } from "../src/catalog.ts";
import { createPool, migrate, OUTBOX_MIGRATION, type Queryable } from "../src/db.ts";
import { type AnyResource, columnOf, MAX_PAGE, ResourceSet } from "../src/resource.ts";
import type { CallContext, ServiceContext, ServiceSpec } from "../src/service.ts";
import { DEPS, ROOT, serviceDomains } from "../src/testing.ts";
import { FILTER_KEY } from "../src/upstream.ts";

type PlanNode = { "Node Type": string; "Index Name"?: string; "Index Cond"?: string; Plans?: PlanNode[] };
/** A connection with sequential scans priced out, on a service's migrated schema. */
type Db = { client: pg.PoolClient; schema: string };

const catalog = buildCatalog();
// A kind a service makes from its context (a VTEP's address policy, a trace's peer calls) is
// made here from an empty environment; nothing is called.
const context = { env: {}, call: () => Promise.reject(new Error("not called")) } as unknown as ServiceContext;

/** The collection GET of a kind at a path without variables (no parent in the path), if it has one. */
function topLevelList(r: AnyResource): Route | undefined {
  const list = catalog.routes.find((route) => route.method === "GET" && route.shape.kind === "collection" && route.service === r.info.service && route.rpc === r.info.rpcs.list);
  return list && !list.template.includes("{") ? list : undefined;
}

/** The filters the gateway offers on a UUID column of the kind's table (a scalar field shown, not a request field of the list). */
async function uuidFilters(db: Db, r: AnyResource, route: Route): Promise<{ field: string; column: string }[]> {
  const columns = await db.client.query<{ column_name: string }>(
    "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND data_type = 'uuid'",
    [db.schema, r.spec.table],
  );
  return columns.rows.flatMap(({ column_name: column }) => {
    const f = r.info.message.fields.find((x) => columnOf(x.name) === column && !x.link && !x.internal && !x.repeated && !x.behaviors.has("INPUT_ONLY"));
    return f && !route.queryFields.has(f.name) ? [{ field: f.name, column }] : [];
  });
}

/** A connection on which the list's query is planned, not run: its plan is kept, no row answered. */
function explaining(db: Db, plans: PlanNode[]): Queryable {
  const query = async (sql: string, params: unknown[]) => {
    if (!/^SELECT \* FROM .* ORDER BY /s.test(sql)) return db.client.query(sql, params);
    const r = await db.client.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
    plans.push(r.rows[0]["QUERY PLAN"][0].Plan as PlanNode);
    return { rows: [] };
  };
  return { query } as unknown as Queryable;
}

const nodesOf = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodesOf)];

/** The table and first column of an index of the schema. */
async function leading(db: Db, index: string): Promise<{ table: string; column: string }> {
  const r = await db.client.query(
    `SELECT t.relname AS table, a.attname AS column FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
      WHERE c.relnamespace = $1::regnamespace AND c.relname = $2`,
    [db.schema, index],
  );
  return r.rows[0] ?? { table: "", column: "" };
}

/** The first columns of the kind's indexes its list's query reads with a condition, for an equal filter on `field`. */
async function indexedBy(db: Db, r: AnyResource, field: string): Promise<string[]> {
  const metadata = new grpc.Metadata();
  metadata.set(FILTER_KEY, JSON.stringify({ [field]: "00000000-0000-4000-8000-000000000001" }));
  const plans: PlanNode[] = [];
  await r.listFiltered(explaining(db, plans), [], { changed: new Set(), metadata } as CallContext, { limit: MAX_PAGE });
  expect(plans, `${r.info.kind}: one list query`).toHaveLength(1);
  const read = nodesOf(plans[0]!).filter((n) => n["Index Name"] && n["Index Cond"]);
  const columns: string[] = [];
  for (const n of read) {
    const index = await leading(db, n["Index Name"]!);
    if (index.table === r.spec.table) columns.push(index.column);
  }
  return columns;
}

for (const domain of serviceDomains()) {
  const { service } = (await import(pathToFileURL(join(ROOT, "services", domain, "src", "service.ts")).href)) as { service: ServiceSpec };
  const set = new ResourceSet(catalog, (service.resources ?? []).map((r) => (typeof r === "function" ? r(context) : r)));
  const lists = set.all().flatMap((r) => {
    const route = topLevelList(r);
    return route ? [{ r, route }] : [];
  });
  if (lists.length === 0) continue;

  describe(`${domain}: a top-level list filtered by an id`, () => {
    const db = { schema: `lidx_${domain}_${randomBytes(3).toString("hex")}` } as Db;
    let pool: pg.Pool;
    beforeAll(async () => {
      pool = createPool(DEPS.databaseUrl, db.schema, 1);
      await migrate(pool, db.schema, [OUTBOX_MIGRATION, ...service.migrations]);
      db.client = await pool.connect();
      await db.client.query("SET enable_seqscan = off");
    });
    afterAll(async () => {
      db.client?.release();
      await pool.query(`DROP SCHEMA IF EXISTS ${db.schema} CASCADE`);
      await pool.end();
    });

    for (const { r, route } of lists) {
      it(`${route.template}: each UUID filter reads an index that starts with its column`, async () => {
        const filters = await uuidFilters(db, r, route);
        expect(filters.map((f) => f.field)).toContain("id");
        const unserved: string[] = [];
        for (const { field, column } of filters) {
          const read = await indexedBy(db, r, field);
          if (!read.includes(column)) unserved.push(`?${field}= reads ${read.length ? `indexes starting with ${read.join(", ")}` : "no index"}`);
        }
        expect(unserved).toEqual([]);
      });
    }
  });
}
