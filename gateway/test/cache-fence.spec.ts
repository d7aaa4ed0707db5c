// A write whose cache invalidation failed (the gateway lost Redis, as in a Sentinel failover) is
// answered only once the cache has been reset on the Redis the gateway reaches again, and after
// VNM_CACHE_FENCE_MS at most (gateway/src/cache.ts, fence): the write's answer waits on
// `invalidate` (dispatch.ts). Real Redis through a TCP proxy the test cuts and opens again, one
// cache, no stack.
import { randomUUID } from "node:crypto";
import type { Logger } from "@vnm/kit";
import { DEPS, freePort, waitFor } from "@vnm/kit/testing";
import { TcpProxy } from "@vnm/e2e/tcp-proxy";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { type CollectionCache, connectRedis, redisCache } from "../src/cache.ts";

const FENCE_MS = 4_000;
const prefix = `vnmtest-${randomUUID().slice(0, 8)}`;
const kinds = ["bridge.Bridge"];
/** Each "collection cache reset" the cache logged, when. */
const resets: number[] = [];
const log: Logger = {
  debug: () => {},
  info: (msg) => {
    if (msg === "collection cache reset") resets.push(Date.now());
  },
  warn: () => {},
  error: () => {},
  child: () => log,
};
const direct = connectRedis(DEPS.redisUrl);
let proxy: TcpProxy;
let cache: CollectionCache;

beforeAll(async () => {
  proxy = new TcpProxy(await freePort(), DEPS.redisUrl);
  await proxy.open();
  cache = redisCache(connectRedis(`redis://127.0.0.1:${proxy.port}`), prefix, () => kinds, log, undefined, { kindBytes: 1 << 20, localBytes: 1 << 20, fenceMs: FENCE_MS });
  await waitFor("the cache's first reset", async () => resets.length > 0);
});

/** Whether the test has Redis cut off now. */
let isCut = false;
const cutRedis = async () => {
  await proxy.cut();
  isCut = true;
};
/** Redis reachable again; resolves with when. */
const openRedis = async () => {
  const at = Date.now();
  await proxy.open();
  isCut = false;
  return at;
};

// Each test starts with Redis reachable and the cache reset after it was cut.
afterEach(async () => {
  if (!isCut) return;
  const reopened = await openRedis();
  await waitFor("the reset after Redis came back", async () => resets.some((at) => at >= reopened));
});

afterAll(async () => {
  await cache.close();
  await proxy.cut().catch(() => {});
  const left = await direct.keys(`${prefix}:*`);
  if (left.length > 0) await direct.del(...left);
  direct.disconnect();
});

/** Fills the list `key` and sees it served from the cache: what a failed invalidation would leave behind. */
async function cached(key: string): Promise<void> {
  const miss = await cache.get(kinds[0]!, key);
  if (!miss || miss.hit) throw new Error(`expected a miss for ${key}`);
  await cache.fill(kinds[0]!, key, Buffer.from("[]"), miss.token);
  expect(await cache.get(kinds[0]!, key)).toMatchObject({ hit: true });
}

it("waits for the reset on the Redis reached again before answering, and answers as soon as it lands", async () => {
  await cached("before-the-cut");
  await cutRedis();
  const t0 = Date.now();
  let answeredAt = 0;
  const write = cache.invalidate(kinds).then(() => {
    answeredAt = Date.now();
  });
  await new Promise((r) => setTimeout(r, 1_000));
  // Redis is away: the write's answer is held.
  expect(answeredAt).toBe(0);
  const reopened = await openRedis();
  await write;
  // Answered by the reset after Redis came back, well before the fence's bound.
  const reset = resets.find((at) => at >= reopened);
  expect(reset).toBeDefined();
  expect(answeredAt).toBeGreaterThanOrEqual(reset!);
  expect(answeredAt - t0).toBeLessThan(FENCE_MS);
  // What was filled before the cut is gone with the reset.
  expect(await cache.get(kinds[0]!, "before-the-cut")).toMatchObject({ hit: false });
});

it("answers after the fence's bound when Redis does not come back, the write being committed", async () => {
  await cached("before-the-second-cut");
  await cutRedis();
  const t0 = Date.now();
  await cache.invalidate(kinds);
  const waited = Date.now() - t0;
  expect(waited).toBeGreaterThanOrEqual(FENCE_MS - 50);
  expect(waited).toBeLessThan(FENCE_MS + 2_000);
  // Meanwhile the cache is bypassed, not served from.
  expect(await cache.get(kinds[0]!, "before-the-second-cut")).toBeUndefined();
});
