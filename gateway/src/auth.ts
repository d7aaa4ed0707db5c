// Authentication at the edge: POST /login (HTTP Basic, optional X-Auth-Project) issues a signed
// token; every other API request must carry it (X-Auth-Token or Authorization: Bearer), and is
// counted against a per-token rate limit shared by the gateway replicas through Redis.
import { createHash } from "node:crypto";
import { ApiError, type Identity, signToken, strongestRole, type Upstream } from "@vnm/kit";
import type { Request, Response } from "express";
import type { Redis } from "ioredis";
import { send } from "./http-error.ts";
import { JSON_TYPE, negotiate, vendor } from "./media.ts";

const TOKEN_TYPE = vendor("Token-v1");
export const API_CHALLENGE = { "WWW-Authenticate": 'Bearer realm="vnm"' };
const LOGIN_CHALLENGE = { "WWW-Authenticate": 'Basic realm="vnm"' };

/** The caller of an API request, or a 401 naming what is wrong. */
export function authenticate(req: Request, verify: (token: string) => Identity | undefined): { identity: Identity; token: string } {
  const header = req.headers["x-auth-token"];
  let token = typeof header === "string" && header.trim() !== "" ? header.trim() : undefined;
  if (!token) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
    token = m?.[1];
  }
  if (!token) throw ApiError.http(401, "A token is required: log in at /login and send it in X-Auth-Token", [], API_CHALLENGE);
  const identity = verify(token);
  if (!identity) throw ApiError.http(401, "The token is not valid or has expired; log in again", [], API_CHALLENGE);
  return { identity, token };
}

/** HTTP Basic credentials; the user name ends at the first ':'. */
function basicCredentials(req: Request): { name: string; password: string } {
  const header = req.headers.authorization;
  if (!header) throw ApiError.http(401, "Authorization header is not set", [], LOGIN_CHALLENGE);
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) throw ApiError.http(401, "Authorization header does not contain Basic credentials", [], LOGIN_CHALLENGE);
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) throw ApiError.http(401, "Authorization header is not valid", [], LOGIN_CHALLENGE);
  return { name: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

export interface LoginOptions {
  secret: string;
  ttlSeconds: number;
  upstream: Upstream;
  callTimeoutMs: number;
  /** Counts failed logins per user name and per client address. */
  failures: RateLimiter;
}

export function loginHandler(opts: LoginOptions) {
  return async (req: Request): Promise<{ status: number; type: string; body: string; headers: Record<string, string> }> => {
    if (req.method !== "POST") throw ApiError.http(405, `Method ${req.method} is not allowed on /login`, [], { Allow: "POST" });
    const type = negotiate(req.headers.accept, [TOKEN_TYPE, JSON_TYPE]);
    if (!type) throw ApiError.http(406, `/login answers ${TOKEN_TYPE} or ${JSON_TYPE}`);
    const { name, password } = basicCredentials(req);
    // Password guessing is limited: failures count per user name (and, ten times looser, per
    // client address); past the limit even the right password waits for the window to end.
    const keys = [`login-user:${name}`, `login-ip:${req.ip}`];
    for (const [i, key] of keys.entries()) {
      const verdict = await opts.failures.peek(key, i === 0 ? 1 : 10);
      if (!verdict.allowed) {
        throw ApiError.http(429, "Too many failed logins; try again later", [], { "Retry-After": String(verdict.retryAfter) });
      }
    }
    const project = req.headers["x-auth-project"];
    let user: Record<string, unknown>;
    try {
      const request: Record<string, unknown> = { name, password };
      if (typeof project === "string" && project !== "") request["project"] = project;
      user = (await opts.upstream.call("vnm.identity.v1.AuthService", "Authenticate", request, opts.callTimeoutMs)).response;
    } catch (err) {
      const e = ApiError.from(err);
      if (e.code === 16) {
        await Promise.all(keys.map((k) => opts.failures.hit(k)));
        throw ApiError.http(401, e.message, [], LOGIN_CHALLENGE);
      }
      throw err;
    }
    const role = strongestRole((user["roles"] as string[] | undefined) ?? []);
    if (!role) throw ApiError.http(401, "The user has no role", [], LOGIN_CHALLENGE);
    const exp = Math.floor(Date.now() / 1000) + opts.ttlSeconds;
    const token = signToken(
      { userId: String(user["id"]), name: String(user["name"]), role, tenantId: (user["tenantId"] as string | undefined) ?? null, exp },
      opts.secret,
    );
    const expires = new Date(exp * 1000);
    return {
      status: 200,
      type,
      body: JSON.stringify({ key: token, expires: expires.toISOString() }),
      headers: {
        "Set-Cookie": `sessionId=${token}; Expires=${expires.toUTCString()}; Path=/; HttpOnly; SameSite=Strict`,
        "X-Auth-Token": token,
        "Cache-Control": "no-store",
      },
    };
  };
}

export function sendLogin(res: Response, r: { status: number; type: string; body: string; headers: Record<string, string> }): void {
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  send(res, r.status, r.type, r.body);
}

// ---- rate limit ----------------------------------------------------------------------------

export interface RateLimiter {
  /** False when the limit is off (0): callers may skip building keys. */
  readonly enabled: boolean;
  /** Counts one request; allowed while the count stays within the limit. */
  hit(key: string): Promise<{ allowed: boolean; retryAfter: number }>;
  /** Whether the count so far is below `factor` x the limit, without counting. */
  peek(key: string, factor?: number): Promise<{ allowed: boolean; retryAfter: number }>;
}

/** Key for a token's counter: a hash, so tokens never sit in Redis. */
export function tokenKey(token: string): string {
  return `token:${createHash("sha256").update(token).digest("base64url").slice(0, 22)}`;
}

/**
 * Fixed-window counter per key. With Redis it is shared by every gateway replica; when Redis
 * does not answer, requests are let through (the limit protects, it must not take the API down).
 */
export function rateLimiter(limit: number, windowSeconds: number, redis: Redis | undefined, prefix: string): RateLimiter {
  if (limit <= 0) {
    const open = async () => ({ allowed: true, retryAfter: 0 });
    return { enabled: false, hit: open, peek: open };
  }
  const local = new Map<string, { window: number; count: number }>();
  const clock = () => {
    const now = Date.now() / 1000;
    const window = Math.floor(now / windowSeconds);
    return { window, retryAfter: Math.max(1, Math.ceil((window + 1) * windowSeconds - now)) };
  };
  /** The count after adding `add`; undefined when Redis does not answer. */
  const count = async (key: string, window: number, add: 0 | 1): Promise<number | undefined> => {
    if (redis) {
      const k = `${prefix}:rl:${key}:${window}`;
      try {
        if (add === 0) return Number((await redis.get(k)) ?? 0);
        const r = await redis.multi().incr(k).expire(k, windowSeconds + 1).exec();
        return Number(r?.[0]?.[1] ?? 0);
      } catch {
        return undefined;
      }
    }
    let e = local.get(key);
    if (!e || e.window !== window) {
      if (local.size > 100_000) local.clear();
      e = { window, count: 0 };
      local.set(key, e);
    }
    e.count += add;
    return e.count;
  };
  return {
    enabled: true,
    async hit(key) {
      const { window, retryAfter } = clock();
      const n = await count(key, window, 1);
      return { allowed: n === undefined || n <= limit, retryAfter };
    },
    async peek(key, factor = 1) {
      const { window, retryAfter } = clock();
      const n = await count(key, window, 0);
      return { allowed: n === undefined || n < limit * factor, retryAfter };
    },
  };
}
