// Postgres: one pool per service, confined to the service's own schema, with migrations that
// are safe when several replicas start at once, and transactions that write the outbox.
import pg from "pg";
import type { Logger } from "./log.ts";
import { tracePool } from "./telemetry.ts";

export interface Migration {
  /** Increasing, never reused. */
  version: number;
  name: string;
  /** SQL run inside one transaction with search_path set to the service schema. */
  sql: string;
}

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertIdentifier(name: string): string {
  if (!IDENT.test(name)) throw new Error(`not a safe SQL identifier: ${name}`);
  return name;
}

export function createPool(databaseUrl: string, schema: string, max = 10): pg.Pool {
  assertIdentifier(schema);
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
    options: `-c search_path=${schema}`,
    application_name: `vnm-${schema}`,
  });
  tracePool(pool);
  // A client losing its connection must not crash the process. Idle ones are replaced by the
  // pool; one in use reports the loss through its query's rejection (503 to the caller) and
  // is discarded on release. Without a listener the 'error' event would end the process.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  return pool;
}

/**
 * Brings the schema up to date. A session-level advisory lock keyed by the schema name makes
 * concurrent replicas wait for each other; each migration runs in its own transaction and is
 * recorded in <schema>.schema_migrations.
 */
export async function migrate(pool: pg.Pool, schema: string, migrations: Migration[], log?: Logger): Promise<void> {
  assertIdentifier(schema);
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock(hashtext($1))", [`vnm-migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = new Set(
      (await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations`)).rows.map(
        (r) => r.version,
      ),
    );
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await inTransaction(client, async (q) => {
        await q.query(`SET LOCAL search_path = ${schema}`);
        await q.query(m.sql);
        await q.query(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      });
      log?.info("migration applied", { schema, version: m.version, name: m.name });
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtext($1))", [`vnm-migrate:${schema}`]).catch(() => {});
    client.release();
  }
}

/** The outbox table every service gets before its own migrations. */
export const OUTBOX_MIGRATION: Migration = {
  version: 0,
  name: "outbox",
  sql: `CREATE TABLE outbox (
          id bigserial PRIMARY KEY,
          subject text NOT NULL,
          payload jsonb NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now())`,
};

export type Queryable = Pick<pg.PoolClient, "query">;

/**
 * The one way the kit runs a transaction on a client: `begin` (BEGIN), `fn`, then `commit`
 * (COMMIT, or a statement that commits with more); ROLLBACK when anything fails.
 */
export async function inTransaction<T>(
  client: pg.PoolClient,
  fn: (q: pg.PoolClient) => Promise<T>,
  opts: { begin?: string; commit?: (q: pg.PoolClient) => Promise<unknown> } = {},
): Promise<T> {
  await client.query(opts.begin ?? "BEGIN");
  try {
    const result = await fn(client);
    await (opts.commit ? opts.commit(client) : client.query("COMMIT"));
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}

/** Postgres error codes the kit turns into API errors. */
export const PG = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  serializationFailure: "40001",
  deadlock: "40P01",
} as const;

export function pgCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? (err as { code?: string }).code : undefined;
}
