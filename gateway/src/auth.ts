// Authentication at the edge: POST /login (HTTP Basic, optional X-Auth-Project) issues a signed
// token; every other API request must carry it (X-Auth-Token or Authorization: Bearer), and is
// counted against a per-token rate limit shared by the gateway replicas through Redis. POST
// /logout ends every token of the caller's user.
import { createHash } from "node:crypto";
import { constants as H } from "node:http2";
import { status as Code } from "@grpc/grpc-js";
import { ApiError, type Identity, signToken, strongestRole, type TokenKeys, tokenVerifier, type Upstream } from "@vnm/kit";
import type { ApiRequest, ApiResponse } from "./context.ts";
import type { Redis } from "ioredis";
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { EdgeError, send } from "./http-error.ts";
import { JSON_TYPE, negotiate, vendor } from "./media.ts";
import type { Revocations } from "./revocation.ts";

const TOKEN_TYPE = vendor("Token-v1");
const API_CHALLENGE = 'Bearer realm="vnm"';
const LOGIN_CHALLENGE = 'Basic realm="vnm"';

/** A token's identity when its signature, expiry and generation hold (verified tokens cached). */
export function callerVerifier(keys: TokenKeys, revoked: Revocations): (token: string) => Promise<Identity | undefined> {
  const verify = tokenVerifier(keys);
  return async (token) => {
    const identity = await verify(token);
    return identity && (await revoked.current(identity)) ? identity : undefined;
  };
}

/** The caller of an API request, or a 401 naming what is wrong. */
export async function authenticate(req: ApiRequest, verify: (token: string) => Promise<Identity | undefined>): Promise<{ identity: Identity; token: string }> {
  const header = req.headers["x-auth-token"];
  let token = typeof header === "string" && header.trim() !== "" ? header.trim() : undefined;
  if (!token) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
    token = m?.[1];
  }
  if (!token) throw EdgeError.challenge("A token is required: log in at /login and send it in X-Auth-Token", API_CHALLENGE);
  const identity = await verify(token);
  if (!identity) throw EdgeError.challenge("The token is not valid, has expired or was revoked; log in again", API_CHALLENGE);
  return { identity, token };
}

/** POST /logout: every token of the caller's user issued so far ends (204). */
export async function logout(req: ApiRequest, res: ApiResponse, who: Identity, revoked: Revocations): Promise<void> {
  if (req.method !== "POST") throw EdgeError.methodNotAllowed(req.method, "/logout", ["POST"]);
  if (who.gen === undefined) throw EdgeError.badRequest("Only a user's token can be logged out");
  await revoked.revoke(who.userId);
  res.setHeader("Set-Cookie", "sessionId=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/; HttpOnly; SameSite=Strict");
  res.statusCode = H.HTTP_STATUS_NO_CONTENT;
  res.end();
}

/** HTTP Basic credentials; the user name ends at the first ':'. */
export function basicCredentials(req: ApiRequest): { name: string; password: string } {
  const header = req.headers.authorization;
  if (!header) throw EdgeError.challenge("Authorization header is not set", LOGIN_CHALLENGE);
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) throw EdgeError.challenge("Authorization header does not contain Basic credentials", LOGIN_CHALLENGE);
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) throw EdgeError.challenge("Authorization header is not valid", LOGIN_CHALLENGE);
  return { name: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

export interface LoginOptions {
  keys: TokenKeys;
  ttlSeconds: number;
  upstream: Upstream;
  callTimeoutMs: number;
  /** Counts login attempts per user name and client address, and per address. */
  failures: LoginLimits;
}

/** The identity service's password check: the user, or a 401 (429 with Retry-After when it is busy). */
async function authenticateUpstream(opts: LoginOptions, name: string, password: string, project: unknown): Promise<Record<string, unknown>> {
  const request: Record<string, unknown> = { name, password };
  if (typeof project === "string" && project !== "") request["project"] = project;
  try {
    return (await opts.upstream.call("vnm.identity.v1.AuthService", "Authenticate", request, opts.callTimeoutMs)).response;
  } catch (err) {
    const e = ApiError.from(err);
    if (e.code === Code.UNAUTHENTICATED) throw EdgeError.challenge(e.message, LOGIN_CHALLENGE);
    if (e.code === Code.RESOURCE_EXHAUSTED) throw EdgeError.tooManyRequests(e.message, 1);
    throw err;
  }
}

export function loginHandler(opts: LoginOptions) {
  return async (req: ApiRequest): Promise<{ status: number; type: string; body: string; headers: Record<string, string> }> => {
    if (req.method !== "POST") throw EdgeError.methodNotAllowed(req.method, "/login", ["POST"]);
    const type = negotiate(req.headers.accept, [TOKEN_TYPE, JSON_TYPE]);
    if (!type) throw EdgeError.notAcceptable([TOKEN_TYPE, JSON_TYPE]);
    const { name, password } = basicCredentials(req);
    // Counted before the check, so parallel guesses get no more checks than the limit; given
    // back when the password is right (or was never checked).
    const source = req.ip ?? "";
    await opts.failures.take(name, source);
    const user = await authenticateUpstream(opts, name, password, req.headers["x-auth-project"]).catch(async (err: unknown) => {
      if (ApiError.from(err).code !== Code.UNAUTHENTICATED) await opts.failures.refund(name, source);
      throw err;
    });
    await opts.failures.refund(name, source);
    const role = strongestRole((user["roles"] as string[] | undefined) ?? []);
    if (!role) throw EdgeError.challenge("The user has no role", LOGIN_CHALLENGE);
    const exp = Math.floor(Date.now() / 1000) + opts.ttlSeconds;
    const token = signToken(
      { userId: String(user["id"]), name: String(user["name"]), role, tenantId: (user["tenantId"] as string | undefined) ?? null, exp, gen: Number(user["tokenGeneration"] ?? 0) },
      opts.keys,
    );
    const expires = new Date(exp * 1000);
    return {
      status: H.HTTP_STATUS_OK,
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

export function sendLogin(res: ApiResponse, r: { status: number; type: string; body: string; headers: Record<string, string> }): void {
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  send(res, r.status, r.type, r.body);
}

// ---- rate limits ---------------------------------------------------------------------------

export interface RateLimiter {
  /** False when the limit is off (0): callers may skip building keys. */
  readonly enabled: boolean;
  /** Counts one request; allowed while the count stays within the limit. */
  hit(key: string): Promise<{ allowed: boolean; retryAfter: number }>;
}

const retryAfterOf = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * A fixed-window limiter (rate-limiter-flexible): in Redis (atomic, shared by every gateway
 * replica) with a per-process stand-in when Redis does not answer or is not configured.
 */
function flexible(points: number, duration: number, redis: Redis | undefined, name: string): RateLimiterAbstract {
  // Replicas configured alike share counters; a gateway with other limits keeps its own.
  const keyPrefix = `${name}:${points}:${duration}`;
  const memory = new RateLimiterMemory({ points, duration, keyPrefix });
  return redis ? new RateLimiterRedis({ storeClient: redis, points, duration, keyPrefix, insuranceLimiter: memory }) : memory;
}

/** Counts requests per key; the count resets each window. */
export function rateLimiter(limit: number, windowSeconds: number, redis: Redis | undefined, prefix: string): RateLimiter {
  if (limit <= 0) return { enabled: false, hit: async () => ({ allowed: true, retryAfter: 0 }) };
  const limiter = flexible(limit, windowSeconds, redis, `${prefix}:rl`);
  return {
    enabled: true,
    async hit(key) {
      try {
        await limiter.consume(key);
        return { allowed: true, retryAfter: 0 };
      } catch (res) {
        if (res instanceof RateLimiterRes) return { allowed: false, retryAfter: retryAfterOf(res.msBeforeNext) };
        return { allowed: true, retryAfter: 0 };
      }
    },
  };
}

export interface LoginLimits {
  /** Counts an attempt before its password is checked; a 429 with Retry-After past a limit. */
  take(name: string, source: string): Promise<void>;
  /** Gives the attempt back: the password was right, or it was never checked. */
  refund(name: string, source: string): Promise<void>;
}

/** Longest back-off of one user name from one source. */
const MAX_BACKOFF_SECONDS = 24 * 3600;

/**
 * Login attempts, counted before the password is checked: `limit` per user name and source
 * address per window, and ten times that per source. Past the first limit a source waits the
 * window, doubled each time it is reached again within a day (back-off, never a lock: other
 * sources still log in as that user).
 */
export function loginLimits(limit: number, windowSeconds: number, redis: Redis | undefined, prefix: string): LoginLimits {
  if (limit <= 0) return { take: async () => {}, refund: async () => {} };
  const pair = flexible(limit, windowSeconds, redis, `${prefix}:login-user-source`);
  const source = flexible(limit * 10, windowSeconds, redis, `${prefix}:login-source`);
  const strikes = flexible(1_000_000, MAX_BACKOFF_SECONDS, redis, `${prefix}:login-strikes`);
  const pairKey = (name: string, ip: string) => createHash("sha256").update(`${name}\n${ip}`).digest("base64url").slice(0, 22);
  const refused = (seconds: number) =>
    EdgeError.tooManyRequests("Too many failed logins; try again later", seconds);
  /** The first refusal of a window starts the back-off: the window, doubled per strike. */
  const backOff = async (key: string, res: RateLimiterRes): Promise<number> => {
    if (res.consumedPoints !== limit + 1) return retryAfterOf(res.msBeforeNext);
    const n = (await strikes.consume(key).catch((r: unknown) => r as RateLimiterRes)).consumedPoints ?? 1;
    const seconds = Math.min(MAX_BACKOFF_SECONDS, windowSeconds * 2 ** Math.min(n - 1, 16));
    await pair.block(key, seconds).catch(() => {});
    return seconds;
  };
  return {
    async take(name, ip) {
      const key = pairKey(name, ip);
      const results = await Promise.allSettled([pair.consume(key), source.consume(ip)]);
      const [byPair, bySource] = results.map((r) => (r.status === "rejected" && r.reason instanceof RateLimiterRes ? r.reason : undefined));
      if (byPair) throw refused(await backOff(key, byPair));
      if (bySource) throw refused(retryAfterOf(bySource.msBeforeNext));
    },
    async refund(name, ip) {
      await Promise.allSettled([pair.reward(pairKey(name, ip)), source.reward(ip)]);
    },
  };
}

/** Key for a token's counter: a hash, so tokens never sit in Redis. */
export function tokenKey(token: string): string {
  return `token:${createHash("sha256").update(token).digest("base64url").slice(0, 22)}`;
}
