// Each burial of a tombstone (kit/tombstones.ts) prunes those older than a day: on every service's
// schema, as its own migrations made it, each tombstone table (an `id uuid` key and an `at`
// timestamptz, nothing else) answers that prune from an index on `at`. Without one, each deletion
// another service announces read every tombstone kept, so deleting 100,000 bridges took minutes.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, migrate, OUTBOX_MIGRATION, type Queryable } from "../src/db.ts";
import type { ServiceSpec } from "../src/service.ts";
import { DEPS, ROOT, serviceDomains } from "../src/testing.ts";
import { Tombstones } from "../src/tombstones.ts";

type PlanNode = { "Node Type": string; "Index Name"?: string; Plans?: PlanNode[] };
const nodesOf = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodesOf)];

for (const domain of serviceDomains()) {
  const { service } = (await import(pathToFileURL(join(ROOT, "services", domain, "src", "service.ts")).href)) as { service: ServiceSpec };

  describe(`${domain}: tombstone tables`, () => {
    const schema = `tidx_${domain}_${randomBytes(3).toString("hex")}`;
    let pool: pg.Pool;
    let client: pg.PoolClient;
    beforeAll(async () => {
      pool = createPool(DEPS.databaseUrl, schema, 1);
      await migrate(pool, schema, [OUTBOX_MIGRATION, ...service.migrations]);
      client = await pool.connect();
      await client.query("SET enable_seqscan = off");
    });
    afterAll(async () => {
      client?.release();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    });

    it("prune their old tombstones through an index on their age", async () => {
      const shaped = await client.query<{ table: string }>(
        `SELECT table_name AS table FROM information_schema.columns WHERE table_schema = $1
          GROUP BY table_name HAVING array_agg(column_name::text || ' ' || data_type::text ORDER BY column_name) = ARRAY['at timestamp with time zone', 'id uuid']`,
        [schema],
      );
      const unindexed: string[] = [];
      for (const { table } of shaped.rows) {
        const plans: PlanNode[] = [];
        // The burial as the kit issues it, its prune planned instead of run.
        const q = {
          query: async (sql: string, params: unknown[]) => {
            if (!/^DELETE FROM/.test(sql)) return client.query(sql, params);
            plans.push((await client.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]["QUERY PLAN"][0].Plan as PlanNode);
            return { rows: [], rowCount: 0 };
          },
        } as unknown as Queryable;
        await client.query("BEGIN");
        await new Tombstones(table, `test-${table}`).bury(q, "00000000-0000-4000-8000-000000000001");
        await client.query("ROLLBACK");
        expect(plans, table).toHaveLength(1);
        if (!nodesOf(plans[0]!).some((n) => n["Index Name"] === `${table}_at`)) unindexed.push(table);
      }
      expect(unindexed).toEqual([]);
    });
  });
}
