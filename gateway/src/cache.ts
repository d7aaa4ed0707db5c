// Collection cache. Collection GETs are answered from here; every kind has a generation
// number, and a fill only lands when the generation it started from is still current, so a
// read racing a write can never put stale data back after the write's invalidation.
// Redis trouble makes the cache step aside (slower, never wrong, never an error): while Redis
// or the change feed is unreachable, or after an invalidation may have been lost, reads go to
// the services, and everything is dropped before the cache is trusted again.
import { messageOf } from "@vnm/kit";
import type { Redis } from "ioredis";
import { LRUCache } from "lru-cache";
import type { Logger } from "@vnm/kit";
import { connectRedis as failFastRedis } from "@vnm/kit/limits";
import { TrackedGenerations } from "./generations.ts";

/**
 * Bodies are kept as UTF-8 bytes: a hit is written to the socket without re-encoding. `kept`:
 * the body is this gateway's own copy, the very object later hits get (worth deriving from).
 */
export type Lookup = { hit: true; body: Buffer; kept: boolean } | { hit: false; token: string };

export interface CollectionCache {
  readonly kind: "redis" | "memory";
  /** Whether item GETs are answered from the cache too (VNM_ITEM_CACHE). */
  readonly items: boolean;
  /** undefined when the cache must not be used now. */
  get(kind: string, key: string): Promise<Lookup | undefined>;
  /**
   * The body `get` would answer a hit with, when this gateway holds it and knows it current
   * without asking anyone (no await: a hit answered in the turn its request came in); undefined
   * otherwise, and then `get` decides.
   */
  peek(kind: string, key: string): Buffer | undefined;
  fill(kind: string, key: string, body: Buffer, token: string): Promise<void>;
  invalidate(kinds: Iterable<string>): Promise<void>;
  /** The change feed lost contact (false) or regained it (true). */
  setFeedConnected(connected: boolean): void;
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

const TTL_SECONDS = 300;
/** Bytes of bodies one kind may hold in Redis; past it fills are refused until an invalidation or the TTL empties the kind. */
export const DEFAULT_KIND_BYTES = 32 * 1024 * 1024;
/** Back-off of the attempts to trust the cache again after Redis trouble: never given up. */
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

/** An unambiguous cache key from its parts (JSON: no separator in a value can make two keys meet). */
export const cacheKey = (...parts: unknown[]): string => JSON.stringify(parts);
/** The key's text after its first part (one or more parts), made once for keys that differ only in it. */
export const cacheKeyTail = (...rest: unknown[]): string => JSON.stringify(rest).slice(1);
/** `cacheKey(first, ...rest)` from `cacheKeyTail(...rest)`: the very same string. */
export const cacheKeyWith = (first: string, tail: string): string => `[${JSON.stringify(first)},${tail}`;
/** A local copy's key: a kind's name never holds a line break, so the first one ends it. */
const copyKey = (kind: string, key: string): string => `${kind}\n${key}`;

// Entry and generation read together (atomically), so a local copy is tagged with the
// generation it belongs to.
const READ_LUA = `return {redis.call('HGET', KEYS[1], ARGV[1]), redis.call('GET', KEYS[2])}`;

// Every KEYS triple is (generation, hash, byte count): a new generation, and the entries gone.
const INVALIDATE_LUA = `
for i = 1, #KEYS, 3 do
  redis.call('INCR', KEYS[i])
  redis.call('DEL', KEYS[i + 1], KEYS[i + 2])
end
return 1`;

// Stores only while the generation is the one the read saw and the kind's bytes stay within
// ARGV[5]; the byte count lives and expires with the hash.
const FILL_LUA = `
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[3] then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 1 end
local size = string.len(ARGV[2]) + string.len(ARGV[1])
if (tonumber(redis.call('GET', KEYS[3]) or '0') + size) > tonumber(ARGV[5]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCRBY', KEYS[3], size)
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[3], ARGV[4])
return 1`;

type FillingRedis = Redis & {
  vnmFill(hash: string, gen: string, bytes: string, field: string, body: Buffer, token: string, ttl: number, max: number): Promise<number>;
  vnmReadBuffer(hash: string, gen: string, field: string): Promise<[Buffer | null, Buffer | null]>;
  vnmInvalidate(numberOfKeys: number, ...keys: string[]): Promise<number>;
};

/**
 * Bodies recently read or written, by key, with the Redis generation they belong to (one read or
 * filled while the local generation moved on is never kept); bounded in bytes (keys included),
 * least recently used dropped first, none over a quarter of the bound. lru-cache keeps recency
 * in arrays: a hit reorders no hash table.
 */
function localCopies(maxBytes: number): LRUCache<string, LocalCopy> {
  return new LRUCache<string, LocalCopy>({
    maxSize: maxBytes,
    maxEntrySize: Math.max(1, Math.floor(maxBytes / 4)),
    sizeCalculation: (copy, key) => copy.body.length + key.length,
  });
}

/**
 * Requests for keys made within one turn of the event loop, sent together in the turn's check
 * phase: `send` gets each key once and answers a value per key, in order. A request only joins
 * a batch not yet sent, so what it gets was done after it was asked.
 */
function perTurn<V>(send: (keys: string[]) => Promise<V[]>): (key: string) => Promise<V> {
  let batch: Map<string, PromiseWithResolvers<V>> | undefined;
  return (key) => {
    if (!batch) {
      const b = new Map<string, PromiseWithResolvers<V>>();
      batch = b;
      setImmediate(() => {
        batch = undefined;
        const keys = [...b.keys()];
        send(keys).then(
          (values) => {
            for (const [i, k] of keys.entries()) b.get(k)!.resolve(values[i]!);
          },
          (err: unknown) => {
            for (const w of b.values()) w.reject(err);
          },
        );
      });
    }
    let waiting = batch.get(key);
    if (!waiting) {
      waiting = Promise.withResolvers<V>();
      batch.set(key, waiting);
    }
    return waiting.promise;
  };
}

/**
 * The cache's commands that perTurn already sends once per turn for every request of the turn
 * (generation reads, invalidations). The auto-pipeline would queue each behind a pipeline of its
 * own, one more tick later: an item hit cost the gateway 23.0-23.9 us of CPU that way, against
 * 20.7-22.0 sent at once (wrk -c32, alternating runs; docs/perf/README.md).
 */
const SENT_PER_TURN = ["mget", "vnmInvalidate"];

interface LocalCopy {
  gen: string;
  body: Buffer;
}

/** A Redis client that fails fast instead of queueing while Redis is away. */
export function connectRedis(url: string): Redis {
  return failFastRedis(url, SENT_PER_TURN);
}

/**
 * Redis holds the shared cache; each gateway keeps local copies of the bodies it served, valid
 * while their kind's generation in Redis is unchanged, so a hit costs one small Redis read
 * instead of moving the whole body through Redis.
 */
class RedisCache implements CollectionCache {
  readonly kind = "redis";
  readonly items: boolean;
  private readonly redis: FillingRedis;
  private readonly local: LRUCache<string, LocalCopy>;
  // Trusted only when connected, fed, and nothing may have been missed.
  private dirty = true;
  private feed = true;
  private resetting: Promise<void> | undefined;
  private readonly prefix: string;
  private readonly allKinds: () => string[];
  private readonly log: Logger;

  private readonly errors: { inc(): void } | undefined;
  private readonly kindBytes: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = RETRY_MIN_MS;
  private readonly localGens = new Map<string, number>();
  /**
   * The kind's generation in Redis, read for every request that asks within one turn of the
   * event loop at once: one MGET for every kind asked, after those requests arrived, so after
   * any write their clients saw answered.
   */
  private readonly generation = perTurn((kinds) => {
    const marks = kinds.map((k) => this.tracked.mark(k));
    return this.redis.mget(kinds.map((k) => this.genKey(k))).then((gens) =>
      gens.map((g, i) => {
        const gen = g ?? "0";
        this.tracked.learn(kinds[i]!, marks[i]!, gen);
        return gen;
      }),
    );
  });
  /** Generations Redis tells this gateway of when they change: a hit on a local copy asks Redis nothing. */
  private readonly tracked: TrackedGenerations;
  /**
   * A kind dropped from Redis, together with every kind invalidated in the same turn: one script
   * call for every write answered and every change heard in that turn (under load, a change
   * notification arrives per write on every gateway), each kind's generation bumped once.
   */
  private readonly dropInRedis = perTurn((kinds) => this.invalidateAll(kinds).then(() => kinds.map(() => undefined)));

  /** How long a write whose invalidation failed waits for a reset before its answer (CacheLimits.fenceMs). */
  private readonly fenceMs: number;
  /** Writes waiting for the next reset to land. */
  private readonly fenced = new Set<() => void>();

  constructor(client: Redis, prefix: string, allKinds: () => string[], log: Logger, limits: CacheLimits, errors?: { inc(): void }) {
    this.errors = errors;
    this.fenceMs = limits.fenceMs ?? 0;
    this.kindBytes = limits.kindBytes;
    this.items = limits.items ?? true;
    this.prefix = prefix;
    this.allKinds = allKinds;
    this.log = log;
    this.redis = client as FillingRedis;
    this.redis.defineCommand("vnmFill", { numberOfKeys: 3, lua: FILL_LUA });
    this.redis.defineCommand("vnmRead", { numberOfKeys: 2, lua: READ_LUA });
    this.redis.defineCommand("vnmInvalidate", { lua: INVALIDATE_LUA });
    this.local = localCopies(limits.localBytes);
    this.tracked = new TrackedGenerations(this.redis, this.genKey(""), log);
    this.redis.on("ready", () => void this.reset());
    this.redis.on("close", () => {
      this.dirty = true;
    });
  }

  private hashKey(kind: string): string {
    return `${this.prefix}:coll:${kind}`;
  }

  private genKey(kind: string): string {
    return `${this.prefix}:gen:${kind}`;
  }

  private bytesKey(kind: string): string {
    return `${this.prefix}:bytes:${kind}`;
  }

  /**
   * Moves the kinds' generations on and drops their entries. What this gateway knew of those
   * generations is forgotten before (reads in flight must not keep the old one) and again after
   * (one read just before the change could have brought the old one back meanwhile).
   */
  private async invalidateAll(kinds: string[]) {
    for (const k of kinds) this.tracked.forget(k);
    const keys = kinds.flatMap((k) => [this.genKey(k), this.hashKey(k), this.bytesKey(k)]);
    try {
      return await this.redis.vnmInvalidate(keys.length, ...keys);
    } finally {
      for (const k of kinds) this.tracked.forget(k);
    }
  }

  /** Drops every kind's entries and generation, then trusts the cache again; retried with back-off until it succeeds. */
  private reset(): Promise<void> {
    this.resetting ??= (async () => {
      try {
        const kinds = this.allKinds();
        // Reads in flight now must not keep what they fetched before the reset.
        for (const k of kinds) this.localGens.set(k, this.localGen(k) + 1);
        await this.invalidateAll(kinds);
        this.local.clear();
        this.dirty = false;
        for (const release of this.fenced) release();
        this.retryMs = RETRY_MIN_MS;
        this.log.info("collection cache reset", { kinds: kinds.length });
      } catch (err) {
        this.log.warn("collection cache reset failed; retrying", { err: messageOf(err), inMs: this.retryMs });
        this.retryLater();
      } finally {
        this.resetting = undefined;
      }
    })();
    return this.resetting;
  }

  /** One more reset attempt after the current back-off (doubling, at most RETRY_MAX_MS). */
  private retryLater(): void {
    if (this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.dirty && this.feed && !this.closed) void this.reset();
    }, this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }

  private closed = false;

  private usable(): boolean {
    return !this.dirty && this.feed && this.redis.status === "ready";
  }

  private localGen(kind: string): number {
    return this.localGens.get(kind) ?? 0;
  }

  peek(kind: string, key: string): Buffer | undefined {
    if (!this.usable()) return undefined;
    const mine = this.local.get(copyKey(kind, key));
    return mine && this.tracked.get(kind) === mine.gen ? mine.body : undefined;
  }

  /**
   * A local copy is served while its kind's generation in Redis is the one it was read under
   * (one small read): a write through any gateway bumps it before that gateway answers, so a
   * client reads its own write through every replica at once. The local generation only keeps
   * reads that raced an invalidation from storing what they fetched.
   */
  async get(kind: string, key: string): Promise<Lookup | undefined> {
    if (!this.usable()) return undefined;
    const localKey = copyKey(kind, key);
    const local = this.localGen(kind);
    try {
      const mine = this.local.get(localKey);
      if (mine) {
        const gen = this.tracked.get(kind) ?? (await this.generation(kind));
        if (gen === mine.gen) return { hit: true, body: mine.body, kept: true };
        this.local.delete(localKey);
      }
      const [body, genRaw] = await this.redis.vnmReadBuffer(this.hashKey(kind), this.genKey(kind), key);
      const gen = genRaw?.toString() ?? "0";
      if (!body) return { hit: false, token: `${gen}/${local}` };
      if (this.localGen(kind) === local) this.local.set(localKey, { gen, body });
      return { hit: true, body, kept: false };
    } catch {
      this.errors?.inc();
      return undefined;
    }
  }

  /** `token` is the Redis generation and the local one the miss was read under. */
  async fill(kind: string, key: string, body: Buffer, token: string): Promise<void> {
    if (!this.usable()) return;
    const [gen = "", local = ""] = token.split("/");
    const stored = await this.redis
      .vnmFill(this.hashKey(kind), this.genKey(kind), this.bytesKey(kind), key, body, gen, TTL_SECONDS, this.kindBytes)
      .catch(() => 0);
    if (stored === 1 && String(this.localGen(kind)) === local) this.local.set(copyKey(kind, key), { gen, body });
  }

  async invalidate(kinds: Iterable<string>): Promise<void> {
    const list = [...kinds];
    if (list.length === 0) return;
    for (const k of list) this.localGens.set(k, this.localGen(k) + 1);
    try {
      await Promise.all(list.map((k) => this.dropInRedis(k)));
    } catch (err) {
      // Someone may now read stale entries: stop trusting the cache until it is reset.
      this.errors?.inc();
      this.dirty = true;
      this.log.warn("collection cache invalidation failed; cache bypassed until reset", { err: messageOf(err) });
      // A timeout leaves the connection open (no new "ready" will come): retry until a reset lands.
      if (this.redis.status === "ready") void this.reset();
      else this.retryLater();
      await this.fence();
    }
  }

  /**
   * Holds a write's answer until a reset has emptied the cache of the Redis this gateway reaches
   * now (the new primary after a failover), for fenceMs at most. Without it, another gateway
   * already on that primary could serve what it filled before the write committed until the
   * write's change notification reached it: a client would not read its acknowledged write.
   */
  private async fence(): Promise<void> {
    if (this.fenceMs <= 0 || this.closed) return;
    let release = () => {};
    const landed = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.fenced.add(release);
    const timer = setTimeout(release, this.fenceMs);
    await landed;
    clearTimeout(timer);
    this.fenced.delete(release);
  }

  setFeedConnected(connected: boolean): void {
    if (connected === this.feed) return;
    this.feed = connected;
    if (connected) void this.reset();
    else this.dirty = true;
  }

  async ready(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.tracked.close();
    this.redis.disconnect();
  }
}

/** Memory bounds: bytes of bodies per kind in Redis, and bytes of local copies in each gateway. */
export interface CacheLimits {
  kindBytes: number;
  localBytes: number;
  /** Item GETs cached too. */
  items?: boolean;
  /**
   * Milliseconds a write whose invalidation failed waits for the cache's reset before it is
   * answered (VNM_CACHE_FENCE_MS; 0: answered at once, the cache bypassed until reset).
   */
  fenceMs?: number;
}

/** `errors` counts the operations that failed (the gateway's vnm_cache_errors_total). */
export function redisCache(
  client: Redis,
  prefix: string,
  allKinds: () => string[],
  log: Logger,
  errors?: { inc(): void },
  limits: CacheLimits = { kindBytes: DEFAULT_KIND_BYTES, localBytes: 16 * 1024 * 1024, items: true },
): CollectionCache {
  return new RedisCache(client, prefix, allKinds, log, limits, errors);
}

/** In-process stand-in for a single gateway (no REDIS_URL). */
export function memoryCache(maxEntriesPerKind = 1000, items = true): CollectionCache {
  // Each kind's answers, the least recently read going first past the bound.
  const kinds = new Map<string, { gen: number; entries: LRUCache<string, Buffer> }>();
  const slot = (kind: string) => {
    let s = kinds.get(kind);
    if (!s) {
      s = { gen: 0, entries: new LRUCache({ max: maxEntriesPerKind }) };
      kinds.set(kind, s);
    }
    return s;
  };
  let feed = true;
  return {
    kind: "memory",
    items,
    async get(kind, key) {
      if (!feed) return undefined;
      const s = slot(kind);
      const body = s.entries.get(key);
      return body !== undefined ? { hit: true, body, kept: true } : { hit: false, token: String(s.gen) };
    },
    peek(kind, key) {
      return feed ? kinds.get(kind)?.entries.get(key) : undefined;
    },
    async fill(kind, key, body, token) {
      const s = slot(kind);
      if (!feed || String(s.gen) !== token) return;
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
