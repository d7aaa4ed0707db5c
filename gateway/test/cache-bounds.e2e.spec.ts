// The collection cache stays bounded and heals itself: keys hold only what changes the answer
// (no Host header, no parameter the route does not read: those are 400s), a per-kind byte budget
// holds whatever a client sends, and after Redis stalls (commands time out while the connection
// stays open) the cache is trusted again by itself once Redis answers.
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEPS, freePort, httpClient, openFeed, rawGet, Stack, waitFor } from "@vnm/e2e/harness";
import { TcpProxy } from "@vnm/e2e/tcp-proxy";

const CAP = 40_000;
const stack = new Stack();
let gw = "";
let viaProxy = "";
let proxy: TcpProxy;
let redis: Redis;
const http = httpClient(() => gw, "application/json", () => stack.adminToken);

beforeAll(async () => {
  proxy = new TcpProxy(await freePort(), DEPS.redisUrl);
  await proxy.open();
  redis = new Redis(DEPS.redisUrl);
  await stack.startServices();
  gw = await stack.startGateway({ VNM_CACHE_KIND_BYTES: String(CAP), VNM_RATE_LIMIT: "0" });
  viaProxy = await stack.startGateway({ REDIS_URL: `redis://127.0.0.1:${proxy.port}`, VNM_RATE_LIMIT: "0" });
});

afterAll(async () => {
  await stack.stop();
  proxy.resume();
  await proxy.cut().catch(() => {});
  redis.disconnect();
});

/** The gateway's cache counters. */
async function counters(base: string): Promise<{ hits: number; misses: number }> {
  const t = (await http("GET", `${base}/metrics`)).text;
  const num = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, "m").exec(t)?.[1]);
  const c = { hits: num("vnm_cache_hits_total"), misses: num("vnm_cache_misses_total") };
  expect(Number.isFinite(c.hits) && Number.isFinite(c.misses)).toBe(true);
  return c;
}

/** Bytes of cached bodies (and their keys) this stack holds in Redis, and how many entries. */
async function cached(): Promise<{ bytes: number; entries: number }> {
  let bytes = 0;
  let entries = 0;
  for (const key of await redis.keys(`${stack.prefix}:coll:*`)) {
    const all = await redis.hgetallBuffer(key);
    for (const [field, body] of Object.entries(all)) {
      bytes += Buffer.byteLength(field) + body.length;
      entries++;
    }
  }
  return { bytes, entries };
}

/**
 * Creates `n` bridges and waits for their change notifications to reach the gateways: each
 * empties the caches once more, so a list stored before the last of them would not last.
 */
async function seed(tenantId: string, n: number): Promise<string[]> {
  const feed = await openFeed(gw, stack.adminToken);
  try {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await http("POST", "/bridges", { name: `b${i}`, tenantId })).json.id);
    await waitFor("the creations on /events", async () => ids.every((id) => feed.events.some((e) => e.data.id === id)), 10_000);
    return ids;
  } finally {
    await feed.close();
  }
}

const idsOf = (r: { json: { id: string }[] }) => r.json.map((b) => b.id);

/** GET with a Host header of our choosing (fetch does not let a client set it). */
const getWithHost = (path: string, host: string) => rawGet(new URL(path, gw).href, { host, "x-auth-token": stack.adminToken, accept: "application/json" });

it("query parameters the route does not read are refused (400) and make no cache entry", async () => {
  const ids = await seed("keys", 2);
  // The copy is stored after the answer (and the writes' own notifications may empty it once more).
  await waitFor("the list cached", async () => {
    const c = await counters(gw);
    expect(idsOf(await http("GET", "/bridges?tenant_id=keys"))).toEqual(ids);
    return (await counters(gw)).hits > c.hits;
  });
  const before = await counters(gw);
  const stored = await cached();
  for (let i = 0; i < 20; i++) {
    const r = await http("GET", `/bridges?tenant_id=keys&junk${i}=${i}&utm=${"x".repeat(i)}`);
    expect(r.status).toBe(400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toContain(`junk${i}`);
  }
  const after = await counters(gw);
  expect(after.hits - before.hits).toBe(0);
  expect(after.misses - before.misses).toBe(0);
  expect(await cached()).toEqual(stored);
});

it("a flood of distinct Host values shares one cache entry, each answer with its own links", async () => {
  const ids = await seed("inflate", 5);
  await waitFor("the list cached", async () => {
    const c = await counters(gw);
    await http("GET", "/bridges?tenant_id=inflate");
    return (await counters(gw)).hits > c.hits;
  });
  const stored = await cached();
  for (let i = 0; i < 60; i++) {
    const r = await getWithHost("/bridges?tenant_id=inflate", `h${i}.example`);
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body) as { id: string }[]).map((b) => b.id)).toEqual(ids);
    expect(r.body).toContain(`http://h${i}.example/bridges/`);
  }
  expect(await cached()).toEqual(stored);
  // Still right after a write: it empties the kind, and it fills again.
  const more = await seed("inflate", 1);
  expect(idsOf(await http("GET", "/bridges?tenant_id=inflate"))).toEqual([...ids, ...more]);
});

it("after Redis stalls (timeouts on an open connection) the cache comes back by itself under load", async () => {
  const first = await seed("heal", 1);
  const list = () => http("GET", `${viaProxy}/bridges?tenant_id=heal`);
  expect(idsOf(await list())).toEqual(first);
  const h0 = (await counters(viaProxy)).hits;
  expect(idsOf(await list())).toEqual(first);
  expect((await counters(viaProxy)).hits).toBe(h0 + 1);

  proxy.stall();
  // The invalidation of this write times out: the gateway stops trusting the cache.
  const second = (await http("POST", `${viaProxy}/bridges`, { name: "two", tenantId: "heal" })).json.id;
  expect(idsOf(await list())).toEqual([...first, second]);
  await new Promise((r) => setTimeout(r, 1_500)); // its first reset attempts time out too
  proxy.resume();

  // Load, and a hit again once the cache is reset: never a stale list on the way.
  const seen = new Set<string>();
  await waitFor(
    "cache hits again",
    async () => {
      const before = (await counters(viaProxy)).hits;
      const rs = await Promise.all(Array.from({ length: 8 }, list));
      for (const r of rs) seen.add(JSON.stringify(idsOf(r)));
      return (await counters(viaProxy)).hits > before;
    },
    20_000,
  );
  expect([...seen]).toEqual([JSON.stringify([...first, second])]);
});
