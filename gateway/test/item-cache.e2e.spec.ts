// Item GETs answered from the cache (docs/decisions.md, "Cache: item reads, bounds, recovery"): no gRPC hop for a cached item, read-your-writes
// through either of two gateway replicas, ETag / If-None-Match from the cached copy, and the
// tenancy rule applied to cached items.
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEPS, expectError, httpClient, openFeed, Stack, waitFor } from "@vnm/e2e/harness";

const PASSWORD = "item-cache-passw0rd-long";
const stack = new Stack();
let gwA = "";
let gwB = "";
const http = httpClient(() => gwA, "application/json", () => stack.adminToken);
const tokens: Record<string, string> = {};

beforeAll(async () => {
  await stack.startServices();
  gwA = await stack.startGateway({ VNM_RATE_LIMIT: "0" });
  gwB = await stack.startGateway({ VNM_RATE_LIMIT: "0" });
  for (const [who, tenantId] of [
    ["ua", "tenant-a"],
    ["ub", "tenant-b"],
  ]) {
    const r = await http("POST", "/users", { name: `${who}-${stack.id}`, password: PASSWORD, tenantId, roles: ["tenant_user"] });
    expect(r.status).toBe(201);
    tokens[who!] = await stack.login(gwA, `${who}-${stack.id}`, PASSWORD);
  }
});

afterAll(async () => {
  await stack.stop();
});

/** Cache hits and gRPC calls to the bridge service counted by a gateway. */
async function counts(base: string): Promise<{ hits: number; calls: number }> {
  const t = (await http("GET", `${base}/metrics`)).text;
  const hits = Number(/^vnm_cache_hits_total(?:\{[^}]*\})? (\d+)/m.exec(t)?.[1]);
  let calls = 0;
  for (const m of t.matchAll(/^vnm_grpc_client_calls_total\{[^}]*method="GetBridge"[^}]*\} (\d+)/gm)) calls += Number(m[1]);
  expect(Number.isFinite(hits)).toBe(true);
  return { hits, calls };
}

/** The copy is stored after the answer: waits until a read of the item is a hit. */
async function cachedAt(gw: string, id: string, token?: string): Promise<void> {
  await waitFor(`${id} cached at ${gw}`, async () => {
    const c = await counts(gw);
    const r = await http("GET", `${gw}/bridges/${id}`, undefined, token ? { "x-auth-token": token } : {});
    expect(r.status).toBe(200);
    return (await counts(gw)).hits > c.hits;
  });
}

/**
 * Creates a bridge and waits for its change notification to reach the gateways: that
 * notification empties their caches once more, so a copy stored before it would not last.
 */
const create = async (name: string, tenantId: string) => {
  const feed = await openFeed(gwA, stack.adminToken);
  try {
    const r = await http("POST", "/bridges", { name, tenantId });
    expect(r.status).toBe(201);
    const made = r.json as { id: string; uri: string };
    await waitFor(`${made.id} on /events`, async () => feed.events.some((e) => e.data.id === made.id), 10_000);
    return made;
  } finally {
    await feed.close();
  }
};

it("a cached item is answered without a gRPC call, with its ETag; If-None-Match gives a 304", async () => {
  const { id } = await create("cached", "tenant-a");
  const first = await http("GET", `${gwA}/bridges/${id}`);
  expect(first.status).toBe(200);
  const etag = first.headers.get("etag")!;
  expect(etag).toMatch(/^"/);
  await cachedAt(gwA, id);
  const before = await counts(gwA);
  expect(before.calls).toBeGreaterThan(0);
  const again = await http("GET", `${gwA}/bridges/${id}`);
  expect(again.status).toBe(200);
  expect(again.text).toBe(first.text);
  expect(again.headers.get("etag")).toBe(etag);
  expect(again.headers.get("cache-control")).toBe("private, no-cache");
  const cond = await http("GET", `${gwA}/bridges/${id}`, undefined, { "if-none-match": etag });
  expect(cond.status).toBe(304);
  expect(cond.text).toBe("");
  expect(cond.headers.get("etag")).toBe(etag);
  const after = await counts(gwA);
  expect(after.hits - before.hits).toBe(2);
  expect(after.calls).toBe(before.calls);
});

it("read-your-writes through two gateways: a write through either is seen at once through both", async () => {
  const { id } = await create("v0", "tenant-a");
  // Both gateways cache the item.
  for (const gw of [gwA, gwB]) for (let i = 0; i < 2; i++) expect((await http("GET", `${gw}/bridges/${id}`)).json.name).toBe("v0");
  const etag0 = (await http("GET", `${gwB}/bridges/${id}`)).headers.get("etag")!;

  // The writing gateway invalidates before it answers.
  expect((await http("PUT", `${gwA}/bridges/${id}`, { name: "v1", tenantId: "tenant-a" })).status).toBe(200);
  expect((await http("GET", `${gwA}/bridges/${id}`)).json.name).toBe("v1");
  // The other learns from the change notification: its stale copy goes.
  await waitFor("gateway B to drop its stale copy", async () => (await http("GET", `${gwB}/bridges/${id}`)).json.name === "v1", 5_000);
  const b = await http("GET", `${gwB}/bridges/${id}`, undefined, { "if-none-match": etag0 });
  expect(b.status).toBe(200);
  expect(b.headers.get("etag")).not.toBe(etag0);

  // And the other way round, the reader now being the gateway that cached v1.
  expect((await http("PUT", `${gwB}/bridges/${id}`, { name: "v2", tenantId: "tenant-a" })).status).toBe(200);
  expect((await http("GET", `${gwB}/bridges/${id}`)).json.name).toBe("v2");
  await waitFor("gateway A to drop its stale copy", async () => (await http("GET", `${gwA}/bridges/${id}`)).json.name === "v2", 5_000);

  // A deleted item is gone through both, cached or not.
  expect((await http("DELETE", `${gwA}/bridges/${id}`)).status).toBe(204);
  expectError(await http("GET", `${gwA}/bridges/${id}`), 404);
  await waitFor("gateway B to see the delete", async () => (await http("GET", `${gwB}/bridges/${id}`)).status === 404, 5_000);
});

/** The commands Redis runs on this stack's keys while `run` runs (MONITOR). */
async function commandsDuring(run: () => Promise<void>): Promise<string[]> {
  const admin = new Redis(DEPS.redisUrl);
  const monitor = await admin.monitor();
  const seen: string[] = [];
  monitor.on("monitor", (_time: string, args: string[]) => {
    if (args.some((a) => a.startsWith(`${stack.prefix}:`))) seen.push(args.join(" "));
  });
  try {
    await run();
    // MONITOR's lines trail the commands a little.
    await new Promise((r) => setTimeout(r, 200));
  } finally {
    monitor.disconnect();
    admin.disconnect();
  }
  return seen;
}

it("a hit asks Redis nothing, and a write through one gateway is read through the other at once, also after the connection that hears changes was cut", async () => {
  const { id } = await create("tracked", "tenant-a");
  await cachedAt(gwB, id);
  // Hits on B's own copy: Redis tells B when the bridges' generation moves, so B asks it nothing.
  const asked = await commandsDuring(async () => {
    for (let i = 0; i < 50; i++) expect((await http("GET", `${gwB}/bridges/${id}`)).json.name).toBe("tracked");
  });
  // At most one read of the generation (one is known for a second at most).
  expect(asked.length, asked.join("\n")).toBeLessThanOrEqual(1);

  const rounds = async (from: number) => {
    for (let i = from; i < from + 10; i++) {
      expect((await http("PUT", `${gwA}/bridges/${id}`, { name: `v${i}`, tenantId: "tenant-a" })).status).toBe(200);
      // No wait: the first read through B after A answered sees the write; the second is B's copy.
      expect((await http("GET", `${gwB}/bridges/${id}`)).json.name, `round ${i}`).toBe(`v${i}`);
      expect((await http("GET", `${gwB}/bridges/${id}`)).json.name, `round ${i}`).toBe(`v${i}`);
    }
  };
  await rounds(0);
  // Every gateway's connection that hears the changes is cut: B reads generations from Redis
  // until it has heard from it again, and still never serves what A replaced.
  const admin = new Redis(DEPS.redisUrl);
  try {
    const list = String(await admin.client("LIST"));
    const ids = [...list.matchAll(/^id=(\d+) .*name=invalidations:(\S+)/gm)].filter((m) => m[2]!.startsWith(`${stack.prefix}:`)).map((m) => m[1]!);
    expect(ids.length).toBe(2);
    for (const cid of ids) await admin.client("KILL", "ID", cid);
  } finally {
    admin.disconnect();
  }
  await rounds(10);
  await waitFor("B asking Redis nothing for its hits again", async () => (await commandsDuring(async () => void (await http("GET", `${gwB}/bridges/${id}`)))).length === 0, 10_000);
  await rounds(20);
});

it("a generation moved elsewhere is heard from Redis itself: no change notification needed", async () => {
  const { id } = await create("heard", "tenant-a");
  await cachedAt(gwB, id);
  const redis = new Redis(DEPS.redisUrl);
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    for (let i = 0; i < 5; i++) {
      // A hit: B knows the bridges' generation now.
      expect((await http("GET", `${gwB}/bridges/${id}`)).json.name).not.toBe(`moved-${i}`);
      // The bridge changes behind every gateway's back (no notification on the bus), and its
      // generation moves as a gateway's invalidation moves it.
      await db.query(`UPDATE ${stack.schema("bridge")}.bridges SET name = $1 WHERE id = $2`, [`moved-${i}`, id]);
      await redis.eval("redis.call('INCR', KEYS[1]) redis.call('DEL', KEYS[2]) return 1", 2, `${stack.prefix}:gen:bridge.Bridge`, `${stack.prefix}:coll:bridge.Bridge`);
      expect((await http("GET", `${gwB}/bridges/${id}`)).json.name, `round ${i}`).toBe(`moved-${i}`);
    }
  } finally {
    redis.disconnect();
    await db.end();
  }
});

it("a non-admin never gets another tenant's cached item: the same 404 as a missing one", async () => {
  const { id } = await create("tenant-a's", "tenant-a");
  // Cached, by the admin and by its own tenant's user.
  expect((await http("GET", `${gwA}/bridges/${id}`)).status).toBe(200);
  const own = await http("GET", `${gwA}/bridges/${id}`, undefined, { "x-auth-token": tokens.ua! });
  expect(own.status).toBe(200);
  expect(own.json.id).toBe(id);
  // Its own tenant's user is answered from the cache.
  await cachedAt(gwA, id, tokens.ua);

  await cachedAt(gwA, id);
  const before = await counts(gwA);
  const other = await http("GET", `${gwA}/bridges/${id}`, undefined, { "x-auth-token": tokens.ub! });
  const missingId = "00000000-0000-4000-8000-000000000000";
  const missing = await http("GET", `${gwA}/bridges/${missingId}`, undefined, { "x-auth-token": tokens.ub! });
  expectError(other, 404);
  expectError(missing, 404);
  expect(other.json.message).toBe(missing.json.message.replace(missingId, id));
  expect(other.text).not.toContain("tenant-a's");
  // Not answered from the cache.
  expect((await counts(gwA)).hits).toBe(before.hits);
});
