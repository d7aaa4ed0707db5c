// Lists as real clients use them: filters by a field of the items (typed, 400 for a bad value or
// a parameter that is none), cache keys made of what changes the answer only (junk parameters
// and Host headers leave Redis as it was), If-Match checked in the write's own transaction (of
// concurrent conditional writes exactly one wins), read-only compat fields judged by their type,
// and a whole list longer than a page streamed.
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPS, expectError, httpClient, openFeed, rawGet, Stack, waitFor } from "../harness/harness.ts";

const stack = new Stack();
let gw = "";
let redis: Redis;
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const ids = (r: { json: { id: string }[] }) => r.json.map((b) => b.id);

beforeAll(async () => {
  redis = new Redis(DEPS.redisUrl);
  await stack.startServices("bridge", "identity", "compat");
  gw = await stack.startGateway({ VNM_RATE_LIMIT: "0" }, false);
});
afterAll(async () => {
  redis.disconnect();
  await stack.stop();
});

/** Creates bridges and waits until their changes reached the gateway (its cache emptied for the last time). */
async function bridges(...bodies: Record<string, unknown>[]): Promise<string[]> {
  const feed = await openFeed(gw, stack.adminToken);
  try {
    const made: string[] = [];
    for (const b of bodies) {
      const r = await http("POST", "/bridges", b);
      expect(r.status, r.text).toBe(201);
      made.push(r.json.id);
    }
    await waitFor("the creations on /events", async () => made.every((id) => feed.events.some((e) => e.data.id === id)), 10_000);
    return made;
  } finally {
    await feed.close();
  }
}

describe("filters", () => {
  it("are named in the root documents, as a query template beside each collection", async () => {
    const root = (await http("GET", "/")).json;
    expect(root.bridgesQuery).toBe(`${gw}/bridges{?tenant_id,limit,marker,id,tenantId,name,adminStateUp,inboundFilterId,outboundFilterId}`);
    const compat = (await http("GET", "/compat")).json;
    expect(compat.load_balancer.pools_query).toMatch(new RegExp(`^${gw}/compat/lb/pools\\{\\?tenant_id,limit,marker,.*\\bname,.*\\bvip_id\\}$`));
  });

  it("a field of the items filters by equality, typed, with tenant_id and paging", async () => {
    const [a, b, c] = await bridges(
      { name: "red", tenantId: "filt", adminStateUp: true },
      { name: "blue", tenantId: "filt", adminStateUp: false },
      { name: "red", tenantId: "filt", adminStateUp: false },
    );
    await bridges({ name: "red", tenantId: "other" });
    expect(ids(await http("GET", "/bridges?tenant_id=filt&name=red"))).toEqual([a, c]);
    expect(ids(await http("GET", "/bridges?tenant_id=filt&adminStateUp=false"))).toEqual([b, c]);
    expect(ids(await http("GET", "/bridges?tenant_id=filt&adminStateUp=false&name=red"))).toEqual([c]);
    expect(ids(await http("GET", `/bridges?id=${c!.toUpperCase()}`))).toEqual([c]);
    const first = await http("GET", "/bridges?tenant_id=filt&name=red&limit=1");
    expect(ids(first)).toEqual([a]);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get("link") ?? "")?.[1];
    expect(next).toContain("name=red");
    expect(ids(await http("GET", next!))).toEqual([c]);
  });

  it("a bad value, a parameter that is neither a field nor an option, or one given twice is a 400 naming it", async () => {
    const bad = await http("GET", "/bridges?adminStateUp=maybe");
    expectError(bad, 400);
    expect(bad.json.violations).toEqual([{ property: "adminStateUp", message: expect.any(String) }]);
    const uuid = await http("GET", "/bridges?inboundFilterId=not-a-uuid");
    expectError(uuid, 400);
    expect(uuid.json.violations).toEqual([{ property: "inboundFilterId", message: "must be a valid UUID" }]);
    const junk = await http("GET", "/bridges?nmae=red&utm_source=x");
    expectError(junk, 400);
    expect(junk.json.violations.map((v: { property: string }) => v.property).sort()).toEqual(["nmae", "utm_source"]);
    expectError(await http("GET", "/bridges?name=a&name=b"), 400);
    // Links, write-only and list-valued fields are no filters.
    expectError(await http("GET", "/bridges?uri=x"), 400);
    expectError(await http("GET", "/bridges?inboundMirrorIds=x"), 400);
  });

  it("compat lists filter by their snake_case fields", async () => {
    const pool = (name: string, up: boolean) => http("POST", "/compat/lb/pools", { tenant_id: "cf", name, admin_state_up: up });
    const p1 = (await pool("web", true)).json.id;
    await pool("db", true);
    const p3 = (await pool("web", false)).json.id;
    const r = await http("GET", "/compat/lb/pools?tenant_id=cf&name=web");
    expect(ids(r)).toEqual([p1, p3]);
    expect(ids(await http("GET", "/compat/lb/pools?name=web&admin_state_up=false&tenant_id=cf"))).toEqual([p3]);
    expectError(await http("GET", "/compat/lb/pools?admin_state_up=nope"), 400);
    const vip = await http("GET", "/compat/lb/pools?vip_id=not-a-uuid");
    expectError(vip, 400);
    expect(vip.json.violations).toEqual([{ property: "vip_id", message: "must be a valid UUID" }]);
  });

  it("a filtered list is cached under its own filter and emptied by a write", async () => {
    const [x] = await bridges({ name: "cached", tenantId: "fc" }, { name: "other", tenantId: "fc" });
    const hits = async () => Number(/^vnm_cache_hits_total(?:\{[^}]*\})? (\d+)/m.exec((await http("GET", "/metrics")).text)?.[1]);
    await waitFor("the filtered list cached", async () => {
      const h = await hits();
      expect(ids(await http("GET", "/bridges?name=cached&tenant_id=fc"))).toEqual([x]);
      return (await hits()) > h;
    });
    // The same filter in another order and spelling of its value is the same entry.
    const h = await hits();
    expect(ids(await http("GET", "/bridges?tenant_id=fc&name=cached"))).toEqual([x]);
    expect(await hits()).toBe(h + 1);
    const [y] = await bridges({ name: "cached", tenantId: "fc" });
    expect(ids(await http("GET", "/bridges?name=cached&tenant_id=fc"))).toEqual([x, y]);
  });
});

/** GET with a Host header of our choosing (fetch does not let a client set it). */
const getWithHost = (path: string, host: string) => rawGet(new URL(path, gw).href, { host, "x-auth-token": stack.adminToken, accept: "application/json" });

/** Keys of this stack in Redis, and the bytes they take. */
async function redisFootprint(): Promise<{ keys: number; bytes: number }> {
  const keys = await redis.keys(`${stack.prefix}:*`);
  let bytes = 0;
  for (const k of keys) bytes += (await redis.memory("USAGE", k)) ?? 0;
  return { keys: keys.length, bytes };
}

describe("cache keys", () => {
  it("5,000 GETs with junk parameters and random Host headers leave Redis as it was", async () => {
    const made = await bridges({ name: "k1", tenantId: "keys" }, { name: "k2", tenantId: "keys" });
    const path = "/bridges?tenant_id=keys";
    await waitFor("the list cached", async () => (await getWithHost(path, "warm.example")).status === 200 && (await redisFootprint()).keys > 0);
    // The item answers too, so their entries exist before counting.
    for (const id of made) await getWithHost(`/bridges/${id}`, "warm.example");
    await getWithHost(path, "warm.example");
    const before = await redisFootprint();
    const work: Promise<void>[] = [];
    for (let i = 0; i < 5_000; i++) {
      const host = `h${i}-${Math.random().toString(36).slice(2)}.example:${1000 + (i % 60000)}`;
      const junk = i % 2 === 0;
      const target = i % 3 === 0 ? `/bridges/${made[i % 2]}` : path;
      work.push(
        getWithHost(junk ? `${target}${target.includes("?") ? "&" : "?"}j${i}=${i}` : target, host).then((r) => {
          expect(r.status).toBe(junk ? 400 : 200);
          if (!junk) expect(r.body).toContain(`http://${host}/bridges/`);
        }),
      );
      if (work.length >= 32) await Promise.all(work.splice(0));
    }
    await Promise.all(work);
    const after = await redisFootprint();
    expect(after.keys).toBe(before.keys);
    // A rate-limit or generation counter may change its value's width by a byte or two.
    expect(after.bytes).toBeLessThanOrEqual(before.bytes + 64);
  });
});

describe("If-Match", () => {
  it("of concurrent PUTs naming the same tag exactly one wins; the rest are 412 with the new tag", async () => {
    const [id] = await bridges({ name: "race", tenantId: "im" });
    const got = await http("GET", `/bridges/${id}`);
    const tag = got.headers.get("etag")!;
    const rs = await Promise.all(
      Array.from({ length: 12 }, (_, i) => http("PUT", `/bridges/${id}`, { name: `w${i}`, tenantId: "im" }, { "if-match": tag })),
    );
    const won = rs.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const r of rs.filter((x) => x.status !== 200)) {
      expectError(r, 412);
      expect(r.headers.get("etag")).toBe(won[0]!.headers.get("etag"));
    }
    expect((await http("GET", `/bridges/${id}`)).json.name).toBe(won[0]!.json.name);
  });

  it("of concurrent PATCHes naming the same tag exactly one wins, and so of DELETE and PUT", async () => {
    const [id] = await bridges({ name: "patch-race", tenantId: "im" });
    const tag = (await http("GET", `/bridges/${id}`)).headers.get("etag")!;
    const patch = (i: number) =>
      http("PATCH", `/bridges/${id}`, JSON.stringify({ name: `p${i}` }), { "content-type": "application/merge-patch+json", "if-match": tag });
    const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => patch(i)));
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    expect(rs.filter((r) => r.status === 412)).toHaveLength(11);
    const now = (await http("GET", `/bridges/${id}`)).headers.get("etag")!;
    const [del, put] = await Promise.all([
      http("DELETE", `/bridges/${id}`, undefined, { "if-match": now }),
      http("PUT", `/bridges/${id}`, { name: "late", tenantId: "im" }, { "if-match": now }),
    ]);
    expect([del.status, put.status].sort()).toEqual(del.status === 204 ? [204, 404].sort() : [200, 412]);
  });
});

describe("PATCH racing a PUT", () => {
  it("with no If-Match either way, each ends as one of the two orders: the PATCH never writes back what the PUT replaced", async () => {
    // PUT then PATCH: name "put", down; PATCH then PUT: name "put", up. A PATCH applied to the
    // item as it was before the PUT and written over it would leave name "start": a lost update.
    const allowed = [JSON.stringify(["put", false]), JSON.stringify(["put", true])];
    for (let round = 0; round < 10; round++) {
      const [id] = await bridges({ name: "start", tenantId: "race", adminStateUp: true });
      const [put, patch] = await Promise.all([
        http("PUT", `/bridges/${id}`, { name: "put", tenantId: "race", adminStateUp: true }),
        http("PATCH", `/bridges/${id}`, JSON.stringify({ adminStateUp: false }), { "content-type": "application/merge-patch+json" }),
      ]);
      expect([put.status, patch.status]).toEqual([200, 200]);
      const now = (await http("GET", `/bridges/${id}`)).json as { name: string; adminStateUp: boolean };
      expect(allowed, `round ${round}: ${JSON.stringify(now)}`).toContain(JSON.stringify([now.name, now.adminStateUp]));
    }
  });
});

describe("compat field types", () => {
  it("a pool's read-only members, health_monitors and vip_id are judged by type: 400 naming each", async () => {
    const r = await http("POST", "/compat/lb/pools", { tenant_id: "ct", members: "not-a-list", health_monitors: [7], vip_id: "not-a-uuid" });
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property).sort()).toEqual(["health_monitors", "members", "vip_id"]);
    const ok = await http("POST", "/compat/lb/pools", { tenant_id: "ct", members: [], vip_id: null });
    expect(ok.status).toBe(201);
    for (const [path, body, field] of [
      ["/compat/lb/members", { tenant_id: "ct", pool_id: "nope" }, "pool_id"],
      ["/compat/lb/vips", { tenant_id: "ct", port_id: "nope" }, "port_id"],
      ["/compat/lb/health_monitors", { tenant_id: "ct", pools: [{ pool_id: 3 }] }, "pools.pool_id"],
      ["/compat/security_group_rules", { tenant_id: "ct", security_group_id: "nope", direction: "ingress" }, "security_group_id"],
    ] as const) {
      const bad = await http("POST", path, body);
      expectError(bad, 400);
      expect(bad.json.violations.map((v: { property: string }) => v.property)).toContain(field);
    }
  });
});

describe("a whole list longer than a page", () => {
  it("is streamed: every item once, in creation order, as the pages say, without Content-Length", async () => {
    const db = new pg.Client({ connectionString: DEPS.databaseUrl });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO ${stack.schema("bridge")}.bridges (id, tenant_id, name) SELECT gen_random_uuid(), 'big', 'b' || n FROM generate_series(1, 2500) n`,
      );
    } finally {
      await db.end();
    }
    const res = await fetch(`${gw}/bridges?tenant_id=big`, { headers: { "x-auth-token": stack.adminToken, accept: "application/json" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBeNull();
    const whole = (await res.json()) as { id: string; name: string }[];
    expect(whole.map((b) => b.name)).toEqual(Array.from({ length: 2500 }, (_, i) => `b${i + 1}`));
    const paged: string[] = [];
    for (let url: string | undefined = "/bridges?tenant_id=big&limit=1000"; url; ) {
      const page = await http("GET", url);
      paged.push(...ids(page));
      url = /<([^>]+)>; rel="next"/.exec(page.headers.get("link") ?? "")?.[1];
    }
    expect(whole.map((b) => b.id)).toEqual(paged);
    // Filters hold across pages too.
    expect((await http("GET", "/bridges?tenant_id=big&name=b2001")).json.map((b: { name: string }) => b.name)).toEqual(["b2001"]);
  });
});
