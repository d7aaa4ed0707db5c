// Rate limits shared by every replica of a part through Redis (rate-limiter-flexible, atomic),
// with a per-process stand-in when Redis does not answer or is not configured: the gateway's
// per-token request limit, and the login limits the identity service applies to every password
// check, whoever asks (the gateway's /login or a caller at identity's own gRPC port).
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { LRUCache } from "lru-cache";
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { ApiError } from "./errors.ts";

export interface RateLimiter {
  /** False when the limit is off (0): callers may skip building keys. */
  readonly enabled: boolean;
  /** Counts one request; allowed while the count stays within the limit. */
  hit(key: string): Promise<{ allowed: boolean; retryAfter: number }>;
}

const retryAfterOf = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** RateLimiterRedis's own options, used only with Redis. */
type StoreOptions = { inMemoryBlockOnConsumed?: number };

/** A fixed-window limiter: in Redis when given, with a per-process stand-in when it does not answer. */
function flexible(points: number, duration: number, redis: Redis | undefined, name: string, store: StoreOptions = {}): RateLimiterAbstract {
  // Replicas configured alike share counters; a part with other limits keeps its own.
  const keyPrefix = `${name}:${points}:${duration}`;
  const memory = new RateLimiterMemory({ points, duration, keyPrefix });
  return redis ? new RateLimiterRedis({ storeClient: redis, points, duration, keyPrefix, insuranceLimiter: memory, ...store }) : memory;
}

/** The share of a limit a process takes from the shared count at once: a hundredth (at least one). */
const rateBlockOf = (limit: number): number => Math.max(1, Math.floor(limit / 100));

/** Keys whose allowance a process keeps at most; the least recently used is dropped first. */
const MAX_ALLOWANCES = 10_000;

/** A key's requests taken from the shared count and not yet spent by this process. */
interface Allowance {
  left: number;
  /** When the window they were counted in ends (performance.now()). */
  until: number;
  /** The block being taken; requests arriving meanwhile wait for it instead of taking their own. */
  taking?: Promise<RateLimiterRes | undefined>;
}

/**
 * The points of a block of `asked` that fall within `limit`: all of it when allowed, what was
 * left under the limit when the block crossed it, none when the key was already refused (or
 * refused in this process, which reports no count).
 */
function granted(res: RateLimiterRes, asked: number, limit: number): number {
  const before = res.consumedPoints - asked;
  return before < 0 ? 0 : Math.min(asked, Math.max(0, limit - before));
}

/**
 * Counts requests per key; the count resets each window. The count is shared (Redis) but taken
 * in blocks (rateBlockOf): a process spends a block's requests without asking Redis again, and
 * only within the window the block was counted in, so no request is let through past the limit;
 * the price is that a key may be refused while other processes still hold unspent requests of
 * theirs (up to a block each). A key whose count reaches the limit is refused in this
 * process until its window ends (rate-limiter-flexible's in-memory block), again without Redis.
 */
export function rateLimiter(limit: number, windowSeconds: number, redis: Redis | undefined, prefix: string): RateLimiter {
  if (limit <= 0) return { enabled: false, hit: async () => ({ allowed: true, retryAfter: 0 }) };
  const limiter = flexible(limit, windowSeconds, redis, `${prefix}:rl`, { inMemoryBlockOnConsumed: limit });
  const block = rateBlockOf(limit);
  const allowances = new LRUCache<string, Allowance>({ max: MAX_ALLOWANCES });
  /** Takes `key`'s next block into `a`; resolves with the refusal when none of it was granted. */
  const take = async (key: string, a: Allowance): Promise<RateLimiterRes | undefined> => {
    // Timed from before the ask: the block ends no later than Redis's window does.
    const asked = performance.now();
    const res = await limiter.consume(key, block).catch((err: unknown) => {
      if (err instanceof RateLimiterRes) return err;
      throw err;
    });
    a.left = granted(res, block, limit);
    a.until = asked + res.msBeforeNext;
    return a.left > 0 ? undefined : res;
  };
  return {
    enabled: true,
    async hit(key) {
      try {
        for (;;) {
          const a = allowances.get(key) ?? { left: 0, until: 0 };
          if (a.left > 0 && a.until > performance.now()) {
            a.left--;
            return { allowed: true, retryAfter: 0 };
          }
          if (!a.taking) {
            a.taking = take(key, a).finally(() => {
              a.taking = undefined;
            });
            allowances.set(key, a);
          }
          const refused = await a.taking;
          if (refused) return { allowed: false, retryAfter: retryAfterOf(refused.msBeforeNext) };
        }
      } catch {
        // Neither Redis nor the stand-in answered: let the request through.
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
    // A refusal is the limiter's answer too (its count); a failure of Redis counts as a first strike.
    const n = (await strikes.consume(key).catch((r: unknown) => (r instanceof RateLimiterRes ? r : undefined)))?.consumedPoints ?? 1;
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
 * Where REDIS_URL says Redis is: `redis://[user:password@]host:port[/db]` (one server), or
 * `redis-sentinel://[user:password@]host:port,host:port,.../<name>` (the Sentinels that know the
 * primary called <name>; the credentials are the data servers'). Through Sentinels a client asks
 * for the primary at every connection, checks it is one, and drops its connection when the
 * Sentinels announce another (ioredis's failover detector): a connection to a primary that was
 * cut off and replaced is not kept.
 */
export function redisTarget(url: string): { url: string } | { sentinels: { host: string; port: number }[]; name: string; username?: string; password?: string } {
  if (!url.startsWith("redis-sentinel://")) return { url };
  const m = /^redis-sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/@]+)\/([A-Za-z0-9._-]+)$/.exec(url);
  if (!m) throw new Error("a Sentinel URL is redis-sentinel://[user:password@]host:port,host:port/<primary name>");
  const sentinels = m[3]!.split(",").map((hp) => {
    const at = hp.lastIndexOf(":");
    const port = at < 0 ? 26379 : Number(hp.slice(at + 1));
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`not a Sentinel address: ${hp}`);
    return { host: at < 0 ? hp : hp.slice(0, at), port };
  });
  const decode = (v: string | undefined) => (v ? decodeURIComponent(v) : undefined);
  return { sentinels, name: m[4]!, username: decode(m[1]), password: decode(m[2]) };
}

/**
 * Connects a client through Sentinels again whenever it ends without being closed on purpose.
 * ioredis (6.0) ends such a client for good ("Connection is closed.") when its failover detector
 * hears the Sentinels announce a new primary while the client is still asking them for one (a host
 * with the primary and a Sentinel gone at once: the reconnection waits on the lost Sentinel while
 * the others fail over), and its cache would be bypassed from then on. Duplicates (ioredis's
 * duplicate()) need it too. test/redis-sentinel.spec.ts makes that failover.
 */
export function keepConnecting(redis: Redis): void {
  let closing = false;
  const disconnect = redis.disconnect.bind(redis);
  redis.disconnect = (reconnect = false) => {
    if (!reconnect) closing = true;
    disconnect(reconnect);
  };
  const quit = redis.quit.bind(redis) as () => Promise<"OK">;
  redis.quit = (() => {
    closing = true;
    return quit();
  }) as typeof redis.quit;
  redis.on("end", () => {
    if (closing) return;
    setTimeout(() => {
      if (!closing && redis.status === "end") redis.connect().catch(() => {});
    }, 500).unref();
  });
}

/** REDIS_URL as configuration reads it: "" for none, either form checked (redisTarget). */
export function redisUrl(raw: string): string | undefined {
  if (raw === "") return undefined;
  redisTarget(raw);
  return raw;
}

/**
 * A Redis client that fails fast instead of queueing while Redis is away; commands issued in
 * one turn of the event loop go out in one write, but for those named in `sentPerTurn`.
 * `url`: REDIS_URL, either form (redisTarget).
 */
export function connectRedis(url: string, sentPerTurn: string[] = []): Redis {
  const options = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2_000,
    retryStrategy: (times: number) => Math.min(times * 200, 2_000),
    lazyConnect: false,
    enableAutoPipelining: true,
    autoPipeliningIgnoredCommands: sentPerTurn,
  };
  const target = redisTarget(url);
  const redis =
    "url" in target
      ? new Redis(target.url, options)
      : new Redis({ ...options, ...target, role: "master", failoverDetector: true, sentinelRetryStrategy: (times: number) => Math.min(times * 200, 2_000), sentinelCommandTimeout: 1_000 });
  if (!("url" in target)) keepConnecting(redis);
  redis.on("error", () => {});
  return redis;
}
