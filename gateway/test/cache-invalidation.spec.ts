// The cache's invalidations of one turn go to Redis together (real Redis, one cache, no stack):
// under write load every gateway hears a change per write, and each used to be a call of its own.
import { randomUUID } from "node:crypto";
import type { Logger } from "@vnm/kit";
import { DEPS, waitFor } from "@vnm/kit/testing";
import { afterAll, expect, it } from "vitest";
import { connectRedis, redisCache } from "../src/cache.ts";

const prefix = `vnmtest-${randomUUID().slice(0, 8)}`;
const kinds = Array.from({ length: 20 }, (_, i) => `bridge.Kind${i}`);
const said: string[] = [];
const log: Logger = {
  debug: () => {},
  info: (msg) => said.push(msg),
  warn: (msg) => said.push(msg),
  error: (msg) => said.push(msg),
  child: () => log,
};
const client = connectRedis(DEPS.redisUrl);
const cache = redisCache(client, prefix, () => kinds, log, undefined, { kindBytes: 1 << 20, localBytes: 1 << 20 });
const reader = connectRedis(DEPS.redisUrl);
const watcher = connectRedis(DEPS.redisUrl);

afterAll(async () => {
  await cache.close();
  // The generations this file made, gone with it (the cache keeps no entries here).
  const left = await reader.keys(`${prefix}:*`);
  if (left.length > 0) await reader.del(...left);
  reader.disconnect();
  watcher.disconnect();
});

const generations = async () => (await reader.mget(kinds.map((k) => `${prefix}:gen:${k}`))).map((g) => Number(g ?? 0));

it("invalidations made in one turn reach Redis as one call, and every kind's generation moves once", async () => {
  await waitFor("the cache's first reset", async () => said.includes("collection cache reset"));
  const monitor = await watcher.monitor();
  const calls: string[][] = [];
  monitor.on("monitor", (_time: string, args: string[]) => {
    if (args.some((a) => a.includes(prefix))) calls.push(args);
  });
  const before = await generations();
  // Twenty writes answered, and the same twenty heard again from the change feed, in one turn.
  await Promise.all([...kinds, ...kinds].map((k) => cache.invalidate([k])));
  const after = await generations();
  expect(after).toEqual(before.map((g) => g + 1));
  await waitFor("the monitor's report", async () => calls.some((c) => /^eval/i.test(c[0]!)));
  expect(calls.filter((c) => /^eval/i.test(c[0]!))).toHaveLength(1);
  monitor.disconnect();
});

it("each turn's invalidations go out on their own: a later one is not lost", async () => {
  const before = await generations();
  await cache.invalidate([kinds[0]!]);
  await cache.invalidate([kinds[0]!, kinds[1]!]);
  const after = await generations();
  expect(after.slice(0, 3)).toEqual([before[0]! + 2, before[1]! + 1, before[2]!]);
});
