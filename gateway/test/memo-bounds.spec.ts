// The gateway's bounded memories (request targets, parsed Accept headers, the in-process
// collection cache) keep what is asked for again and again when a client spreads its requests
// over ever new values: past the bound the least recently used goes, not everything at once.
import { expect, it } from "vitest";
import { memoryCache } from "../src/cache.ts";
import { parseAccept } from "../src/media.ts";
import { Targets } from "../src/targets.ts";

it("keeps a request target asked for often while 2,000 others pass once", () => {
  const targets = new Targets();
  const hot = targets.of("/bridges?limit=20");
  for (let i = 0; i < 2000; i++) {
    targets.of(`/bridges/${i}`);
    if (i % 100 === 0) expect(targets.of("/bridges?limit=20")).toBe(hot);
  }
  expect(targets.of("/bridges?limit=20")).toBe(hot);
});

it("keeps an Accept header's parse used often while 2,000 others pass once", () => {
  const header = "application/vnd.org.service.Bridge-v4+json, application/json;q=0.5";
  const hot = parseAccept(header);
  for (let i = 0; i < 2000; i++) {
    parseAccept(`application/x-${i}`);
    if (i % 100 === 0) expect(parseAccept(header)).toBe(hot);
  }
  expect(parseAccept(header)).toBe(hot);
});

it("the in-process cache keeps a list read often while 2,000 others are filled once; an invalidation still drops it", async () => {
  const cache = memoryCache(1000);
  const miss = async (key: string) => {
    const r = await cache.get("bridge", key);
    if (!r || r.hit) throw new Error(`${key} was kept or not looked up`);
    return r.token;
  };
  await cache.fill("bridge", "hot", Buffer.from("[]"), await miss("hot"));
  for (let i = 0; i < 2000; i++) {
    await cache.fill("bridge", `k${i}`, Buffer.from("[]"), await miss(`k${i}`));
    if (i % 100 === 0) expect((await cache.get("bridge", "hot"))?.hit).toBe(true);
  }
  expect(cache.peek("bridge", "hot")?.toString()).toBe("[]");
  await cache.invalidate(["bridge"]);
  expect((await cache.get("bridge", "hot"))?.hit).toBe(false);
});
