// Collection cache. Collection GETs are answered from here; every kind has a generation
// number, and a fill only lands when the generation it started from is still current, so a
// read racing a write can never put stale data back after the write's invalidation.
// Redis trouble makes the cache step aside (slower, never wrong, never an error): while Redis
// or the change feed is unreachable, or after an invalidation may have been lost, reads go to
// the services, and everything is dropped before the cache is trusted again.
import { Redis } from "ioredis";
import type { Logger } from "@vnm/kit";

export type Lookup = { hit: true; body: string } | { hit: false; token: string };

export interface CollectionCache {
  readonly kind: "redis" | "memory";
  /** undefined when the cache must not be used now. */
  get(kind: string, key: string): Promise<Lookup | undefined>;
  fill(kind: string, key: string, body: string, token: string): Promise<void>;
  invalidate(kinds: Iterable<string>): Promise<void>;
  /** The change feed lost contact (false) or regained it (true). */
  setFeedConnected(connected: boolean): void;
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

const TTL_SECONDS = 300;

const FILL_LUA = `
if (redis.call('GET', KEYS[2]) or '0') == ARGV[3] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  return 1
end
return 0`;

type FillingRedis = Redis & {
  vnmFill(hash: string, gen: string, field: string, body: string, token: string, ttl: number): Promise<number>;
};

/** A Redis client that fails fast instead of queueing while Redis is away. */
export function connectRedis(url: string): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    lazyConnect: false,
  });
  redis.on("error", () => {});
  return redis;
}

export function redisCache(client: Redis, prefix: string, allKinds: () => string[], log: Logger): CollectionCache {
  const redis = client as FillingRedis;
  redis.defineCommand("vnmFill", { numberOfKeys: 2, lua: FILL_LUA });

  // Trusted only when connected, fed, and nothing may have been missed.
  let dirty = true;
  let feed = true;
  let resetting: Promise<void> | undefined;
  const hashKey = (kind: string) => `${prefix}:coll:${kind}`;
  const genKey = (kind: string) => `${prefix}:gen:${kind}`;

  const reset = () => {
    resetting ??= (async () => {
      try {
        const kinds = allKinds();
        const p = redis.multi();
        for (const k of kinds) p.incr(genKey(k)).del(hashKey(k));
        await p.exec();
        dirty = false;
        log.info("collection cache reset", { kinds: kinds.length });
      } catch (err) {
        log.warn("collection cache reset failed", { err: (err as Error).message });
      } finally {
        resetting = undefined;
      }
    })();
    return resetting;
  };
  redis.on("ready", () => void reset());
  redis.on("close", () => {
    dirty = true;
  });

  const usable = () => !dirty && feed && redis.status === "ready";

  return {
    kind: "redis",
    async get(kind, key) {
      if (!usable()) return undefined;
      try {
        const r = await redis.pipeline().hget(hashKey(kind), key).get(genKey(kind)).exec();
        if (!r || r[0]?.[0] || r[1]?.[0]) return undefined;
        const body = r[0]?.[1] as string | null;
        if (body !== null && body !== undefined) return { hit: true, body };
        return { hit: false, token: (r[1]?.[1] as string | null) ?? "0" };
      } catch {
        return undefined;
      }
    },
    async fill(kind, key, body, token) {
      if (!usable()) return;
      await redis.vnmFill(hashKey(kind), genKey(kind), key, body, token, TTL_SECONDS).catch(() => {});
    },
    async invalidate(kinds) {
      const list = [...kinds];
      if (list.length === 0) return;
      try {
        const p = redis.multi();
        for (const k of list) p.incr(genKey(k)).del(hashKey(k));
        const r = await p.exec();
        if (!r || r.some(([e]) => e)) throw new Error("invalidation not applied");
      } catch (err) {
        // Someone may now read stale entries: stop trusting the cache until it is reset.
        dirty = true;
        log.warn("collection cache invalidation failed; cache bypassed until reset", {
          err: (err as Error).message,
        });
        if (redis.status === "ready") void reset();
      }
    },
    setFeedConnected(connected) {
      if (connected === feed) return;
      feed = connected;
      if (connected) void reset();
      else dirty = true;
    },
    async ready() {
      try {
        return (await redis.ping()) === "PONG";
      } catch {
        return false;
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}

/** In-process stand-in for a single gateway (no REDIS_URL). */
export function memoryCache(maxEntriesPerKind = 1000): CollectionCache {
  const kinds = new Map<string, { gen: number; entries: Map<string, string> }>();
  const slot = (kind: string) => {
    let s = kinds.get(kind);
    if (!s) {
      s = { gen: 0, entries: new Map() };
      kinds.set(kind, s);
    }
    return s;
  };
  let feed = true;
  return {
    kind: "memory",
    async get(kind, key) {
      if (!feed) return undefined;
      const s = slot(kind);
      const body = s.entries.get(key);
      return body !== undefined ? { hit: true, body } : { hit: false, token: String(s.gen) };
    },
    async fill(kind, key, body, token) {
      const s = slot(kind);
      if (!feed || String(s.gen) !== token) return;
      if (s.entries.size >= maxEntriesPerKind) s.entries.clear();
      s.entries.set(key, body);
    },
    async invalidate(list) {
      for (const k of list) {
        const s = slot(k);
        s.gen++;
        s.entries.clear();
      }
    },
    setFeedConnected(connected) {
      if (connected && !feed) {
        for (const s of kinds.values()) {
          s.entries.clear();
          s.gen++;
        }
      }
      feed = connected;
    },
    async ready() {
      return true;
    },
    async close() {},
  };
}
