// A Postgres role per service: the migrations step, connected with the administrator's URL
// (VNM_DATABASE_ADMIN_URL), creates the login role a service's DATABASE_URL names and the
// service's schema owned by that role; the service then connects as that role, which has no
// right on any other service's schema (schemas are created without PUBLIC rights).
import type pg from "pg";
import { assertIdentifier, pgLib } from "./db.ts";

export interface ServiceRole {
  role: string;
  password: string;
}

/** The role and password a service's DATABASE_URL logs in with. */
export function roleOf(databaseUrl: string): ServiceRole {
  const url = new URL(databaseUrl);
  const role = decodeURIComponent(url.username);
  if (!role) throw new Error("DATABASE_URL names no user: the service's role is its user");
  return { role: assertIdentifier(role), password: decodeURIComponent(url.password) };
}

/**
 * The role of a service's schema in the database `adminUrl` names: `<database>_<schema>`.
 * Roles are global to a Postgres cluster; the database in the name keeps two deployments of
 * one cluster (a database each) apart.
 */
export function roleName(adminUrl: string, schema: string): string {
  const database = new URL(adminUrl).pathname.slice(1).toLowerCase().replace(/[^a-z0-9_]/g, "_") || "postgres";
  return assertIdentifier(`${database}_${assertIdentifier(schema)}`.slice(0, 63));
}

/** `adminUrl` logging in as `role` with `password` instead (same server and database). */
export function serviceDatabaseUrl(adminUrl: string, { role, password }: ServiceRole): string {
  const url = new URL(adminUrl);
  url.username = encodeURIComponent(role);
  url.password = encodeURIComponent(password);
  return url.toString();
}

/**
 * Creates (or brings up to date) `role` with its password, and `schema` owned by it, in one
 * transaction under an advisory lock (replicas' migration steps may run at once). A schema
 * made before roles existed (owned by the administrator) is handed over with what it holds.
 * Only this role and this schema are touched.
 */
export async function provisionRole(adminUrl: string, schema: string, { role, password }: ServiceRole): Promise<void> {
  assertIdentifier(schema);
  assertIdentifier(role);
  if (!password) throw new Error(`no password for the database role ${role}: DATABASE_URL must carry one`);
  const pg = pgLib();
  const client = new pg.Client({ connectionString: adminUrl, application_name: "vnm-migrate" });
  await client.connect();
  const r = pg.escapeIdentifier(role);
  const s = pg.escapeIdentifier(schema);
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`vnm-role:${role}`]);
    const found = await client.query<{ rolcanlogin: boolean; rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean }>(
      "SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = $1",
      [role],
    );
    const secret = `PASSWORD ${pg.escapeLiteral(password)}`;
    const now = found.rows[0];
    if (!now) await client.query(`CREATE ROLE ${r} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE ${secret}`);
    else {
      // Only the attributes that differ: an administrator that is not a superuser (a role with
      // CREATEROLE, as CloudNativePG's database owner on Kubernetes) may not name SUPERUSER or
      // CREATEDB at all, not even to leave them off.
      const differ = [!now.rolcanlogin && "LOGIN", now.rolsuper && "NOSUPERUSER", now.rolcreatedb && "NOCREATEDB", now.rolcreaterole && "NOCREATEROLE"].filter(Boolean);
      await client.query(`ALTER ROLE ${r} WITH ${[...differ, secret].join(" ")}`);
    }
    // Handing a schema to the role takes being able to act as it: a superuser may; an
    // administrator with CREATEROLE becomes a member of the role it made (PostgreSQL 16 and later
    // give its maker ADMIN on it, but not SET).
    const superuser = (await client.query<{ s: boolean }>("SELECT rolsuper AS s FROM pg_roles WHERE rolname = current_user")).rows[0]?.s;
    if (!superuser) await client.query(`GRANT ${r} TO CURRENT_USER`);
    const owner = await client.query<{ owner: string }>("SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = $1", [schema]);
    if (owner.rowCount === 0) await client.query(`CREATE SCHEMA ${s} AUTHORIZATION ${r}`);
    else if (owner.rows[0]!.owner !== role) await handOver(client, schema, role);
    // Nobody else's: no right for PUBLIC on the schema, nor (before Postgres 15) CREATE in public.
    // The latter only when PUBLIC has it: two steps revoking it at once (other roles, so not
    // under one lock) would fail with "tuple concurrently updated".
    await client.query(`REVOKE ALL ON SCHEMA ${s} FROM PUBLIC`);
    const publicOpen = await client.query<{ open: boolean }>(
      "SELECT CASE WHEN to_regnamespace('public') IS NULL THEN false ELSE has_schema_privilege('public', 'public', 'CREATE') END AS open",
    );
    if (publicOpen.rows[0]?.open) await client.query("REVOKE CREATE ON SCHEMA public FROM PUBLIC");
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    await client.end();
  }
}

/**
 * Gives `schema` and its tables, views, sequences not owned by a column, and routines to
 * `role` (a table's indexes, row type and column sequences follow it).
 */
async function handOver(client: pg.Client, schema: string, role: string): Promise<void> {
  const statements = await client.query<{ sql: string }>(
    `SELECT format('ALTER %s %s OWNER TO %I',
                   CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                   c.oid::regclass, $2::text) AS sql
       FROM pg_class c
      WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
        AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))
     UNION ALL
     SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, $2::text) FROM pg_proc p WHERE p.pronamespace = $1::regnamespace`,
    [schema, role],
  );
  const { escapeIdentifier } = pgLib();
  await client.query(`ALTER SCHEMA ${escapeIdentifier(schema)} OWNER TO ${escapeIdentifier(role)}`);
  for (const { sql } of statements.rows) await client.query(sql);
}
