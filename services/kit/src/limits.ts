// Rate limits shared by every replica of a part through Redis (rate-limiter-flexible, atomic),
// with a per-process stand-in when Redis does not answer or is not configured: the gateway's
// per-token request limit, and the login limits the identity service applies to every password
// check, whoever asks (the gateway's /login or a caller at identity's own gRPC port).
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { ApiError } from "./errors.ts";

export interface RateLimiter {
  /** False when the limit is off (0): callers may skip building keys. */
  readonly enabled: boolean;
  /** Counts one request; allowed while the count stays within the limit. */
  hit(key: string): Promise<{ allowed: boolean; retryAfter: number }>;
}

const retryAfterOf = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** A fixed-window limiter: in Redis when given, with a per-process stand-in when it does not answer. */
function flexible(points: number, duration: number, redis: Redis | undefined, name: string): RateLimiterAbstract {
  // Replicas configured alike share counters; a part with other limits keeps its own.
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
  /** Counts an attempt before its password is checked; RESOURCE_EXHAUSTED with a retry-after past a limit. */
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
  const refused = (seconds: number) => ApiError.exhausted("Too many failed logins; try again later", seconds);
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

/**
 * A Redis client that fails fast instead of queueing while Redis is away; commands issued in
 * one turn of the event loop go out in one write, but for those named in `sentPerTurn`.
 */
export function connectRedis(url: string, sentPerTurn: string[] = []): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    lazyConnect: false,
    enableAutoPipelining: true,
    autoPipeliningIgnoredCommands: sentPerTurn,
  });
  redis.on("error", () => {});
  return redis;
}
