// The migrations step's roles (db-roles.ts) on the machine's Postgres: a schema made before roles
// existed is handed over to its service's role, the step can run again, and the role stays out
// of every other schema. Role and schema names are this run's own; both go at the end.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPool, migrate, OUTBOX_MIGRATION } from "../src/db.ts";
import { provisionRole, roleName, serviceDatabaseUrl } from "../src/db-roles.ts";
import { DEPS } from "../src/testing.ts";

const id = randomBytes(4).toString("hex");
const schema = `roles_${id}`;
const other = `roles_other_${id}`;
const role = { role: roleName(DEPS.databaseUrl, schema), password: `p${id}` };
const admin = new pg.Client({ connectionString: DEPS.databaseUrl });

/** `sql` run as the service's role; its rows, or the error's code. */
async function asRole(sql: string): Promise<unknown[] | string> {
  const db = new pg.Client({ connectionString: serviceDatabaseUrl(DEPS.databaseUrl, role) });
  await db.connect();
  try {
    return (await db.query(sql)).rows;
  } catch (err) {
    return (err as { code: string }).code;
  } finally {
    await db.end();
  }
}

beforeAll(async () => {
  await admin.connect();
  // What an earlier version left: the schema and its objects owned by the administrator.
  await admin.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.items (id bigserial PRIMARY KEY, name text);
    CREATE FUNCTION ${schema}.shout() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.name := upper(NEW.name); RETURN NEW; END $$;
    CREATE TRIGGER shout BEFORE INSERT ON ${schema}.items FOR EACH ROW EXECUTE FUNCTION ${schema}.shout();
    CREATE SCHEMA ${other}; CREATE TABLE ${other}.secrets (s text)`);
});

afterAll(async () => {
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; DROP SCHEMA IF EXISTS ${other} CASCADE`);
  await admin.query(`DROP ROLE IF EXISTS ${role.role}`);
  await admin.end();
});

it("hands an existing schema and what it holds to the service's role, which then writes there", async () => {
  await provisionRole(DEPS.databaseUrl, schema, role);
  const owners = await admin.query(
    `SELECT nspowner::regrole::text AS o FROM pg_namespace WHERE nspname = $1
     UNION SELECT relowner::regrole::text FROM pg_class WHERE relnamespace = $1::regnamespace
     UNION SELECT proowner::regrole::text FROM pg_proc WHERE pronamespace = $1::regnamespace`,
    [schema],
  );
  expect(owners.rows).toEqual([{ o: role.role }]);
  expect(await asRole(`INSERT INTO ${schema}.items (name) VALUES ('a') RETURNING id, name`)).toEqual([{ id: "1", name: "A" }]);
});

it("runs again (a restart, a new password) and keeps the role out of other schemas and of public", async () => {
  role.password = `q${id}`;
  await provisionRole(DEPS.databaseUrl, schema, role);
  expect(await asRole(`SELECT count(*)::int AS n FROM ${schema}.items`)).toEqual([{ n: 1 }]);
  expect(await asRole(`SELECT * FROM ${other}.secrets`)).toBe("42501");
  expect(await asRole(`CREATE TABLE public.roles_${id} (i int)`)).toBe("42501");
  expect(await asRole(`CREATE SCHEMA roles_more_${id}`)).toBe("42501");
});

it("refuses a role without a password", async () => {
  await expect(provisionRole(DEPS.databaseUrl, schema, { role: role.role, password: "" })).rejects.toThrow(/no password/);
});

it("a service whose schema the step did not make says so at start, instead of a bare permission error", async () => {
  const pool = createPool(serviceDatabaseUrl(DEPS.databaseUrl, role), `roles_missing_${id}`);
  try {
    await expect(migrate(pool, `roles_missing_${id}`, [OUTBOX_MIGRATION])).rejects.toThrow(/does not exist and this role may not create it: run the migrations step \(VNM_DATABASE_ADMIN_URL\)/);
  } finally {
    await pool.end();
  }
});

it("works for an administrator that is not a superuser, only CREATEROLE (CloudNativePG's database owner on Kubernetes), again and again", async () => {
  const adminRole = `roles_admin_${id}`;
  const own = `roles_na_${id}`;
  const database = new URL(DEPS.databaseUrl).pathname.slice(1);
  await admin.query(`CREATE ROLE ${adminRole} LOGIN CREATEROLE PASSWORD 'a${id}'; GRANT CREATE ON DATABASE ${database} TO ${adminRole}`);
  const adminUrl = serviceDatabaseUrl(DEPS.databaseUrl, { role: adminRole, password: `a${id}` });
  const service = { role: roleName(adminUrl, own), password: `s${id}` };
  try {
    await provisionRole(adminUrl, own, service);
    service.password = `t${id}`;
    await provisionRole(adminUrl, own, service);
    const db = new pg.Client({ connectionString: serviceDatabaseUrl(DEPS.databaseUrl, service) });
    await db.connect();
    try {
      await db.query(`CREATE TABLE ${own}.items (id int)`);
      expect((await db.query(`SELECT count(*)::int AS n FROM ${own}.items`)).rows).toEqual([{ n: 0 }]);
      await expect(db.query(`SELECT * FROM ${other}.secrets`)).rejects.toMatchObject({ code: "42501" });
    } finally {
      await db.end();
    }
    const made = await admin.query("SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = $1", [service.role]);
    expect(made.rows).toEqual([{ rolsuper: false, rolcreatedb: false, rolcreaterole: false }]);
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${own} CASCADE; DROP ROLE IF EXISTS ${service.role}; REVOKE CREATE ON DATABASE ${database} FROM ${adminRole}; DROP ROLE ${adminRole}`);
  }
});
