// Users (User-v1) and the password check behind /login. Passwords are stored only as scrypt
// hashes and never returned or logged.
import { randomUUID } from "node:crypto";
import {
  ApiError,
  type CallContext,
  type Checked,
  type Handlers,
  isUuid,
  type Logger,
  MAX_TOKEN_SECONDS,
  notice,
  Resource,
  type Queryable,
  type ServiceContext,
  type Store,
  keyRing,
  strongestRole,
  USER_AUDIENCE,
  type Violation,
  verifyToken,
} from "@vnm/kit";
import { status as Code } from "@grpc/grpc-js";
import type { IdentityConfig } from "./config.ts";
import { DUMMY_HASH, hashPassword, verifyPassword } from "./passwords.ts";
import { passwordProblem } from "./policy.ts";
import { identityParts, sourceOf, tokenState } from "./tokens.ts";

/** How many tokens of a user may be ended one at a time and not yet expired; one more moves the generation on. */
const MAX_ENDED_TOKENS = 256;

/**
 * A user's body, checked against identity.proto's rules: a name of 1 to 255 characters without
 * ':', a password of at most 1,024 characters, a tenant of at most 255, 1 to 3 distinct roles.
 */
type User = Checked<"vnm.identity.v1.User">;

/** The password policy (policy.ts), told the user's name and tenant; a user created needs a password. */
function passwordRule(u: User, creating: boolean): Violation[] {
  if (u.password === undefined) return creating ? [{ property: "password", message: "may not be null" }] : [];
  const problem = passwordProblem(u.password, [u.name, u.tenantId]);
  return problem ? [{ property: "password", message: problem }] : [];
}

/** A user whose strongest role is a tenant's belongs to a tenant. */
function tenantRule(u: User): Violation[] {
  return strongestRole(u.roles ?? []) !== "admin" && u.tenantId === undefined ? [{ property: "tenantId", message: "is required for tenant roles" }] : [];
}

/**
 * The last administrator cannot give the role up: nobody could give it back (a restart only
 * resets the admin's password). One such change at a time (the lock), so two administrators
 * demoting each other at once cannot both go through.
 */
async function keepsAnAdmin(q: Queryable, u: User, current: UserRow | undefined): Promise<void> {
  if (!current?.roles.includes("admin") || u.roles?.includes("admin")) return;
  await q.query("SELECT pg_advisory_xact_lock(hashtext('vnm-identity:admins'))");
  const others = await q.query("SELECT 1 FROM users WHERE 'admin' = ANY(roles) AND id <> $1 LIMIT 1", [current.id]);
  if (others.rows.length === 0) throw ApiError.conflict("The last administrator cannot give up the admin role.");
}

interface UserRow {
  id: string;
  name: string;
  password_hash: string;
  tenant_id: string | null;
  roles: string[];
  token_generation: number;
}

export const users = new Resource({
  proto: "vnm.identity.v1.User",
  table: "users",
  // A PUT without a password keeps the current one.
  columns: async (u) => ({
    name: u.name,
    tenant_id: u.tenantId ?? null,
    roles: u.roles,
    ...(u.password === undefined ? {} : { password_hash: await hashPassword(u.password) }),
  }),
  render: (r: UserRow) => ({ id: r.id, name: r.name, roles: r.roles, tenantId: r.tenant_id }),
  tenantColumn: "tenant_id",
  validate: async (q, u, { current }: { current?: UserRow }) => {
    const violations = [...passwordRule(u, !current), ...tenantRule(u)];
    if (violations.length > 0) throw ApiError.invalid(violations);
    await keepsAnAdmin(q, u, current);
  },
  conflict: (u) => `A user named ${u.name} already exists.`,
  async cascade(_q, row: UserRow, _emit, ctx) {
    if (ctx.identity?.userId === row.id) throw ApiError.conflict("You cannot delete the user you are logged in as.");
  },
});

const COLS = "id, name, password_hash, tenant_id, roles, token_generation";

interface AuthenticateRequest {
  name?: string;
  password?: string;
  project?: string;
  ttlSeconds?: number;
  source?: string;
}

/** The user a name and password are of, with the tenant to act in; UNAUTHENTICATED otherwise. */
async function checkPassword(store: Store, req: AuthenticateRequest): Promise<{ row: UserRow; tenantId: string | null }> {
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
  return { row, tenantId };
}

export function authHandlers(svc: ServiceContext): Handlers {
  const { store } = svc;
  const parts = identityParts(svc);
  const ring = keyRing(async () => (await parts.keys).published());
  const generation = (row: { token_generation: number } | undefined) => {
    if (!row) throw ApiError.notFound("There is no such user");
    const endedTokens: string[] = [];
    return { generation: row.token_generation, endedTokens };
  };
  return {
    async GetTokenGeneration(req: { id?: string }) {
      const state = await tokenState(store, req.id);
      if (!state) throw ApiError.notFound("There is no such user");
      return { generation: state.generation, endedTokens: [...state.ended] };
    },
    /** Logout everywhere: every token issued so far ends; every part hears of it as an update of the user. */
    async RevokeTokens(req: { id?: string }, ctx: CallContext) {
      if (!isUuid(req.id)) throw ApiError.notFound("There is no such user");
      return store.tx(ctx, async (q, emit) => {
        const row = (await q.query<UserRow>("UPDATE users SET token_generation = nextval('token_generations') WHERE id = $1 RETURNING id, tenant_id, token_generation", [req.id])).rows[0];
        if (row) {
          await q.query("DELETE FROM ended_tokens WHERE user_id = $1", [row.id]);
          emit({ kind: "User", event: "updated", id: row.id, path: `/users/${row.id}`, tenantId: row.tenant_id });
        }
        return generation(row);
      });
    },
    /**
     * Logout of one session: the token presented ends, the user's others go on. Its id is kept
     * until it expires (every part hears of it as an update of the user, and asks again); past
     * MAX_ENDED_TOKENS such ids, the generation moves on instead.
     */
    async EndToken(req: { token?: string }, ctx: CallContext) {
      const who = await verifyToken(req.token ?? "", ring, [USER_AUDIENCE]);
      if (!who || who.gen === undefined || !isUuid(who.userId) || !who.tokenId || who.tokenId.length > 64) {
        throw ApiError.unauthenticated("The token is not valid, has expired or was revoked");
      }
      return store.tx(ctx, async (q, emit) => {
        const row = (await q.query<UserRow>("SELECT id, tenant_id, token_generation FROM users WHERE id = $1 FOR UPDATE", [who.userId])).rows[0];
        if (!row || who.gen! < row.token_generation) throw ApiError.unauthenticated("The token is not valid, has expired or was revoked");
        await q.query("DELETE FROM ended_tokens WHERE expires_at <= now()");
        const ended = (await q.query<{ n: number }>("SELECT count(*)::int AS n FROM ended_tokens WHERE user_id = $1", [row.id])).rows[0]!.n;
        if (ended >= MAX_ENDED_TOKENS) {
          row.token_generation = (await q.query<UserRow>("UPDATE users SET token_generation = nextval('token_generations') WHERE id = $1 RETURNING token_generation", [row.id])).rows[0]!.token_generation;
          await q.query("DELETE FROM ended_tokens WHERE user_id = $1", [row.id]);
        } else {
          await q.query("INSERT INTO ended_tokens (user_id, token_id, expires_at) VALUES ($1, $2, to_timestamp($3)) ON CONFLICT DO NOTHING", [row.id, who.tokenId, who.exp]);
        }
        emit({ kind: "User", event: "updated", id: row.id, path: `/users/${row.id}`, tenantId: row.tenant_id });
        const state = await tokenState(q, row.id);
        return { generation: row.token_generation, endedTokens: [...(state?.ended ?? [])] };
      });
    },
    /**
     * Login: the password checked (counted before the check, per user name and source, so
     * parallel guesses get no more checks than the limit; given back when it is right or was
     * never checked), then the user's token signed here.
     */
    async Authenticate(req: AuthenticateRequest, ctx: CallContext) {
      if (req.ttlSeconds !== undefined && req.ttlSeconds !== null && !(Number.isSafeInteger(req.ttlSeconds) && req.ttlSeconds >= 1)) {
        throw ApiError.invalid([{ property: "ttlSeconds", message: "must be a whole number of seconds, 1 or more" }]);
      }
      const name = req.name ?? "";
      const source = sourceOf(req, ctx);
      await parts.limits.take(name, source);
      const { row, tenantId } = await checkPassword(store, req).catch(async (err: unknown) => {
        if (ApiError.from(err).code !== Code.UNAUTHENTICATED) await parts.limits.refund(name, source);
        throw err;
      });
      await parts.limits.refund(name, source);
      // The life asked for, never longer than the configured one (itself at most a day).
      const expires = Math.floor(Date.now() / 1000) + Math.min(MAX_TOKEN_SECONDS, parts.ttlSeconds, req.ttlSeconds ?? parts.ttlSeconds);
      const who = { userId: row.id, name: row.name, role: strongestRole(row.roles)!, tenantId, exp: expires, gen: row.token_generation };
      const token = await (await parts.keys).sign(who, USER_AUDIENCE);
      const out: Record<string, unknown> = { id: row.id, name: row.name, roles: row.roles, tokenGeneration: row.token_generation, token, expires };
      if (tenantId !== null) out["tenantId"] = tenantId;
      return out;
    },
  };
}

/**
 * Makes sure the first admin exists. With VNM_ADMIN_PASSWORD the admin's password follows it;
 * without, an admin created now gets a generated password, printed once on stdout.
 */
export async function ensureAdmin(store: Store, log: Logger, config: Pick<IdentityConfig, "adminUser" | "adminPassword">): Promise<void> {
  const name = config.adminUser;
  const given = config.adminPassword;
  const problem = given === undefined ? undefined : passwordProblem(given, [name]);
  if (problem) throw new Error(`VNM_ADMIN_PASSWORD ${problem} (NIST SP 800-63B: 12 characters or more, not a common password, not easy to guess)`);
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
    notice([`Generated password for admin user '${name}': ${password}`, "(shown once; set VNM_ADMIN_PASSWORD to choose it)"]);
  }
  if (inserted.rowCount) log.info("admin user created", { user: name });
}
