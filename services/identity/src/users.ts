// Users (User-v1) and the password check behind /login. Passwords are stored only as scrypt
// hashes and never returned or logged.
import { randomUUID } from "node:crypto";
import {
  ApiError,
  type CallContext,
  type Handlers,
  type Logger,
  listPage,
  PG,
  pageOf,
  parseInput,
  pathId,
  pgCode,
  ROLES,
  type Store,
  strongestRole,
  text,
  uuid,
} from "@vnm/kit";
import { z } from "zod";
import { DUMMY_HASH, hashPassword, verifyPassword } from "./passwords.ts";

const KIND = "User";

const password = () => text(1024).refine((s) => [...s].length >= 8, "must be at least 8 characters long");

const userInput = z
  .object({
    id: uuid().optional(),
    name: text(255)
      .refine((s) => s.length > 0, "must not be empty")
      .refine((s) => !s.includes(":"), "must not contain ':'"),
    password: password().optional(),
    tenantId: text(255).optional(),
    roles: z
      .array(z.enum(ROLES, { message: `must each be one of ${ROLES.join(", ")}` }))
      .min(1, "must name at least one role")
      .max(3, "must name each role at most once")
      .refine((r) => new Set(r).size === r.length, "must name each role at most once"),
  })
  .superRefine((u, ctx) => {
    if (strongestRole(u.roles) !== "admin" && u.tenantId === undefined) {
      ctx.addIssue({ code: "custom", path: ["tenantId"], message: "is required for tenant roles" });
    }
  });

interface UserRow {
  id: string;
  name: string;
  password_hash: string;
  tenant_id: string | null;
  roles: string[];
}

const COLS = "id, name, password_hash, tenant_id, roles";

function toMessage(r: UserRow): Record<string, unknown> {
  const m: Record<string, unknown> = { id: r.id, name: r.name, roles: r.roles };
  if (r.tenant_id !== null) m["tenantId"] = r.tenant_id;
  return m;
}

const notFound = (id: string) => ApiError.notFound(`There is no ${KIND} with ID ${id}.`);
const nameTaken = (name: string) => ApiError.conflict(`A user named ${name} already exists.`);

export function userHandlers(store: Store): Handlers {
  return {
    async ListUsers(req: Record<string, unknown>) {
      const { rows, next_marker } = await listPage<UserRow>(store.pool, "users", pageOf(req));
      return next_marker ? { items: rows.map(toMessage), next_marker } : { items: rows.map(toMessage) };
    },

    async GetUser(req: { id: string }) {
      const id = pathId(req.id, KIND);
      const row = (await store.query<UserRow>(`SELECT ${COLS} FROM users WHERE id = $1`, [id])).rows[0];
      if (!row) throw notFound(id);
      return toMessage(row);
    },

    async CreateUser(req: { user?: unknown }, ctx: CallContext) {
      const u = parseInput(userInput, req.user ?? {});
      if (u.password === undefined) throw ApiError.invalid([{ property: "password", message: "may not be null" }]);
      const id = u.id ?? randomUUID();
      const hash = await hashPassword(u.password);
      return store.tx(ctx, async (q, emit) => {
        let row: UserRow | undefined;
        try {
          row = (
            await q.query<UserRow>(
              `INSERT INTO users (id, name, password_hash, tenant_id, roles) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLS}`,
              [id, u.name, hash, u.tenantId ?? null, u.roles],
            )
          ).rows[0];
        } catch (err) {
          // The transaction is aborted here: the violated constraint says which value is taken.
          if (pgCode(err) === PG.uniqueViolation) {
            throw (err as { constraint?: string }).constraint === "users_pkey"
              ? ApiError.conflict(`A ${KIND} with ID ${id} already exists.`)
              : nameTaken(u.name);
          }
          throw err;
        }
        if (!row) throw new Error("insert returned no row");
        emit({ kind: KIND, event: "created", id, path: `/users/${id}`, tenantId: row.tenant_id });
        return toMessage(row);
      });
    },

    async UpdateUser(req: { id: string; user?: unknown }, ctx: CallContext) {
      const id = pathId(req.id, KIND);
      const exists = await store.query("SELECT 1 FROM users WHERE id = $1", [id]);
      if (!exists.rowCount) throw notFound(id);
      const u = parseInput(userInput, req.user ?? {});
      const hash = u.password === undefined ? null : await hashPassword(u.password);
      return store.tx(ctx, async (q, emit) => {
        let row: UserRow | undefined;
        try {
          row = (
            await q.query<UserRow>(
              `UPDATE users SET name = $2, password_hash = coalesce($3, password_hash), tenant_id = $4, roles = $5
               WHERE id = $1 RETURNING ${COLS}`,
              [id, u.name, hash, u.tenantId ?? null, u.roles],
            )
          ).rows[0];
        } catch (err) {
          if (pgCode(err) === PG.uniqueViolation) throw nameTaken(u.name);
          throw err;
        }
        if (!row) throw notFound(id);
        emit({ kind: KIND, event: "updated", id, path: `/users/${id}`, tenantId: row.tenant_id });
        return toMessage(row);
      });
    },

    async DeleteUser(req: { id: string }, ctx: CallContext) {
      const id = pathId(req.id, KIND);
      if (ctx.identity?.userId === id) throw ApiError.conflict("You cannot delete the user you are logged in as.");
      return store.tx(ctx, async (q, emit) => {
        const row = (await q.query<UserRow>(`DELETE FROM users WHERE id = $1 RETURNING ${COLS}`, [id])).rows[0];
        if (!row) throw notFound(id);
        emit({ kind: KIND, event: "deleted", id, path: `/users/${id}`, tenantId: row.tenant_id });
        return {};
      });
    },
  };
}

export function authHandlers(store: Store): Handlers {
  return {
    async Authenticate(req: { name?: string; password?: string; project?: string }) {
      const denied = () => ApiError.unauthenticated("The user name or password is not valid");
      const row = (await store.query<UserRow>(`SELECT ${COLS} FROM users WHERE name = $1`, [req.name ?? ""])).rows[0];
      const ok = await verifyPassword(req.password ?? "", row?.password_hash ?? DUMMY_HASH);
      if (!row || !ok) throw denied();
      const role = strongestRole(row.roles);
      if (!role) throw denied();
      let tenantId = row.tenant_id;
      if (role === "admin") tenantId = req.project ?? row.tenant_id;
      else if (req.project !== undefined && req.project !== row.tenant_id) {
        throw ApiError.unauthenticated(`User ${row.name} is not a member of project ${req.project}`);
      }
      const out: Record<string, unknown> = { id: row.id, name: row.name, roles: row.roles };
      if (tenantId !== null) out["tenantId"] = tenantId;
      return out;
    },
  };
}

/**
 * Makes sure the first admin exists. With VNM_ADMIN_PASSWORD the admin's password follows it;
 * without, an admin created now gets a generated password, printed once on stdout.
 */
export async function ensureAdmin(store: Store, log: Logger): Promise<void> {
  const name = process.env["VNM_ADMIN_USER"] || "admin";
  const given = process.env["VNM_ADMIN_PASSWORD"] || undefined;
  const existing = (await store.query<UserRow>(`SELECT ${COLS} FROM users WHERE name = $1`, [name])).rows[0];
  if (existing) {
    if (given && !(await verifyPassword(given, existing.password_hash))) {
      await store.query("UPDATE users SET password_hash = $2 WHERE id = $1", [existing.id, await hashPassword(given)]);
      log.info("admin password set from VNM_ADMIN_PASSWORD", { user: name });
    }
    return;
  }
  const password = given ?? randomUUID().replace(/-/g, "").slice(0, 20);
  const inserted = await store.query(
    "INSERT INTO users (id, name, password_hash, tenant_id, roles) VALUES ($1, $2, $3, NULL, $4) ON CONFLICT (name) DO NOTHING",
    [randomUUID(), name, await hashPassword(password), ["admin"]],
  );
  if (inserted.rowCount && !given) {
    process.stdout.write(`\nGenerated password for admin user '${name}': ${password}\n(shown once; set VNM_ADMIN_PASSWORD to choose it)\n\n`);
  }
  if (inserted.rowCount) log.info("admin user created", { user: name });
}
