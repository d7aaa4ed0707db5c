// Postgres: one pool per service, confined to the service's own schema, with migrations that
// are safe when several replicas start at once, and transactions that write the outbox.
import { hash } from "node:crypto";
import { createRequire } from "node:module";
import type pg from "pg";
import type { Logger } from "./log.ts";
import { tracePool } from "./telemetry.ts";

export interface Migration {
  /** Increasing, never reused. */
  version: number;
  name: string;
  /** SQL run inside one transaction with search_path set to the service schema. */
  sql: string;
}

const require = createRequire(import.meta.url);

/**
 * node-postgres, loaded on its first use: the gateway takes its other parts from the kit and
 * never opens a database connection, and pg's 30-odd modules, loaded at start, held about
 * 1.5 MB of its heap for nothing.
 */
export function pgLib(): typeof pg {
  return require("pg") as typeof pg;
}

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertIdentifier(name: string): string {
  if (!IDENT.test(name)) throw new Error(`not a safe SQL identifier: ${name}`);
  return name;
}

export function createPool(databaseUrl: string, schema: string, max = 10): pg.Pool {
  assertIdentifier(schema);
  const pool = new (pgLib().Pool)({
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
    // Created here only when missing: a service's role owns its schema (made by the migrations
    // step) but may not create schemas, and CREATE SCHEMA IF NOT EXISTS checks that right first.
    const present = (await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount;
    if (!present) {
      await client.query(`CREATE SCHEMA ${schema}`).catch((err: unknown) => {
        if (pgCode(err) !== "42501") throw err;
        throw new Error(`the schema ${schema} does not exist and this role may not create it: run the migrations step (VNM_DATABASE_ADMIN_URL) first`);
      });
    }
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
 * What a transaction's body may do besides querying: end the transaction with its last
 * statement, the statements that commit (`end`: "COMMIT", or more then COMMIT) going out in the
 * same message, so the last statement and the commit take one round trip. Nothing may run in
 * the transaction after it. `alone` is the same work as one statement of its own (the last
 * statement and what `end` writes, without BEGIN and COMMIT), run instead when nothing ran
 * before it: a named statement, which Postgres parses and plans once per connection, and which
 * commits by itself.
 */
export interface TxEnd {
  last(text: string, values: unknown[], end: () => string, alone?: () => Statement | undefined): Promise<pg.QueryResult>;
}

export interface Statement {
  text: string;
  values: unknown[];
}

/**
 * The one way the kit runs a transaction on a client: `begin` (BEGIN), `fn`, then `commit`
 * (COMMIT, or a statement that commits with more) unless `fn` ended the transaction itself
 * (`TxEnd.last`); ROLLBACK when anything fails. The BEGIN costs no round trip of its own: it
 * goes out with the transaction's first statement (see `beginWithFirst`).
 */
export async function inTransaction<T>(
  client: pg.PoolClient,
  fn: (q: pg.PoolClient, end: TxEnd) => Promise<T>,
  opts: { begin?: string; commit?: (q: pg.PoolClient) => Promise<unknown> } = {},
): Promise<T> {
  const tx = beginWithFirst(client, opts.begin ?? "BEGIN");
  let ended = false;
  const last = async (text: string, values: unknown[], end: () => string, alone?: () => Statement | undefined): Promise<pg.QueryResult> => {
    if (ended) throw new Error("the transaction has ended");
    ended = true;
    const single = tx.begun() ? undefined : alone?.();
    if (single) return named(client, single.text, single.values);
    const inline = withLiterals(text, values);
    if (inline === undefined) {
      const result = await tx.q.query(text, values);
      await tx.q.query(end());
      return result;
    }
    return (await tx.send(`${inline}; ${end()}`))[0]!;
  };
  try {
    const result = await fn(tx.q, { last });
    if (!ended) await (opts.commit ? opts.commit(tx.q) : tx.q.query("COMMIT"));
    return result;
  } catch (err) {
    if (tx.begun()) await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}

type PgUtils = { prepareValue(v: unknown): unknown; escapeLiteral(s: string): string };
let utils: PgUtils | undefined;

/** pg's own conversion of a parameter to its text, and its quoting (loaded once, on first use). */
function pgUtils(): PgUtils {
  if (!utils) utils = require("pg/lib/utils.js") as PgUtils;
  return utils;
}

/**
 * `text` with its $n parameters written as literals, as Postgres would read them (an untyped
 * literal takes its type from where it stands, like an untyped parameter); undefined when
 * the text holds quotes, dollar quotes or comments (a `$n` there may be no parameter) or a
 * value is binary.
 */
export function withLiterals(text: string, values: readonly unknown[]): string | undefined {
  if (/['"\\]|\$[A-Za-z_$]|--|\/\*/.test(text)) return undefined;
  const { prepareValue, escapeLiteral } = pgUtils();
  let ok = true;
  const out = text.replace(/\$(\d+)/g, (_m, n: string) => {
    const i = Number(n) - 1;
    if (i < 0 || i >= values.length) {
      ok = false;
      return "";
    }
    const v = prepareValue(values[i]);
    if (v === null) return "NULL";
    if (typeof v !== "string") {
      ok = false;
      return "";
    }
    return escapeLiteral(v);
  });
  return ok ? out : undefined;
}

/**
 * A client whose first query carries `begin` in front of it, in one simple-protocol message
 * (its parameters written as literals), so a transaction's BEGIN takes no round trip alone.
 * A first query that cannot be written so (quotes in its text, binary values, a query
 * object) is preceded by the BEGIN on its own. `send` runs statements already written as
 * literals (`begin` first when nothing ran yet) and gives each one's result, the BEGIN's left out.
 */
function beginWithFirst(client: pg.PoolClient, begin: string): { q: pg.PoolClient; begun: () => boolean; send: (text: string) => Promise<pg.QueryResult[]> } {
  let begun = false;
  const send = async (text: string): Promise<pg.QueryResult[]> => {
    const skip = begun ? 0 : begin.split(";").length;
    const full = begun ? text : `${begin}; ${text}`;
    begun = true;
    const results = (await client.query(full)) as unknown as pg.QueryResult | pg.QueryResult[];
    return (Array.isArray(results) ? results : [results]).slice(skip);
  };
  const query = async (text: unknown, values?: unknown) => {
    if (begun) return client.query(text as string, values as unknown[]);
    const inline = typeof text === "string" && (values === undefined || Array.isArray(values)) ? withLiterals(text, (values as unknown[] | undefined) ?? []) : undefined;
    if (inline === undefined) {
      begun = true;
      await client.query(begin);
      return client.query(text as string, values as unknown[]);
    }
    const results = await send(inline);
    return results[results.length - 1];
  };
  const q = new Proxy(client, { get: (target, key) => (key === "query" ? query : Reflect.get(target, key)) });
  return { q, begun: () => begun, send };
}

const statementNames = new Map<string, string>();

/**
 * A statement run as a named one: Postgres parses and plans each text once per connection
 * instead of on every call. A table changed under a prepared plan (another replica's migration)
 * makes Postgres refuse it ("cached plan must not change result type"); such a statement is
 * run again unnamed (it changed nothing: the refusal comes before it runs).
 */
async function named(q: pg.Pool | pg.PoolClient, text: string, values: unknown[] | undefined): Promise<pg.QueryResult> {
  let name = statementNames.get(text);
  if (!name) {
    name = `vnm_${hash("sha256", text, "base64url").slice(0, 24)}`;
    statementNames.set(text, name);
  }
  try {
    return await q.query({ name, text, values });
  } catch (err) {
    if (pgCode(err) !== PG.cachedPlanChanged) throw err;
    return q.query(text, values);
  }
}

/** Reads outside a transaction as named statements (see `named`). */
export function preparedReads(pool: pg.Pool): Queryable {
  const query = (text: string, values?: unknown[]) => named(pool, text, values);
  return { query } as unknown as Queryable;
}

/** Postgres error codes the kit turns into API errors. */
export const PG = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  serializationFailure: "40001",
  deadlock: "40P01",
  /** feature_not_supported: among others, a prepared plan whose result type changed. */
  cachedPlanChanged: "0A000",
} as const;

export function pgCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? (err as { code?: string }).code : undefined;
}
