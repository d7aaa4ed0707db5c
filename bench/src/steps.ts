// The measured paths, in the order they run: the item GET (hit, miss, 304), the cached
// collection, two gateway replicas, the table's growth, then the writes (last, so they do not
// change the growth sizes).
import { get as httpGet } from "node:http";
import { type Baselines, POST_BODY } from "./baselines.ts";
import { type Bridges, COLL_TENANT, FIXED_TENANT, JSON_TYPE } from "./bridges.ts";
import { rssMb } from "./memory.ts";
import type { Publications } from "./publish.ts";
import { load, ok, type Result, type Runner } from "./scenario.ts";
import { GROWTH_SIZES, want } from "./settings.ts";
import type { BenchStack } from "./stack.ts";
import { fmt, hold, holdGrowth, tailRow } from "./table.ts";
import type { WrkRequest } from "./wrk.ts";

export interface Ctx {
  bench: BenchStack;
  runner: Runner;
  bridges: Bridges;
  publications: Publications;
  baselines: Baselines;
  /** The first gateway. */
  base: string;
  /** The item every item row reads: its path and its URL at the first gateway. */
  path: string;
  itemUrl: string;
  collUrl: string;
  /** Seconds of unrecorded load a fresh gateway gets before its first row. */
  stackWarmup: number;
}

/** The bridges at one table size, the rows measured there. */
export interface Step {
  size: number;
  rows: number;
  item: Result;
  miss: Result;
  page: Result;
  fixed: Result;
}

/** The bytes a GET's answer carries on the wire (content coding kept) and its Content-Encoding. */
function wireBytes(url: string, headers: Record<string, string>): Promise<{ bytes: number; coding?: string }> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers }, (res) => {
      let bytes = 0;
      res.on("data", (d: Buffer) => {
        bytes += d.length;
      });
      res.on("end", () => resolve({ bytes, coding: res.headers["content-encoding"] }));
    }).on("error", reject);
  });
}

/** The cache hit (always: the replicas are held to it); with `item`, the miss and the 304. */
export async function itemRows(c: Ctx): Promise<Result> {
  const { express, floor } = c.baselines;
  const hit = await c.runner.scenario("item GET /bridges/:id (cache hit)", "gateway", { url: c.itemUrl }, { cacheBase: c.base, paired: express });
  hold(hit, express.result, 0.7);
  c.runner.results.push(tailRow(hit, express.result, 3));
  if (!want("item")) return hit;
  // The miss path: a gateway that answers every item GET with its gRPC call.
  const noCache = await c.bench.startGateway("gateway-no-item-cache", { VNM_ITEM_CACHE: "false" });
  await c.runner.cannon({ url: `${noCache.base}${c.path}` }, c.stackWarmup);
  const miss = await c.runner.scenario("item GET /bridges/:id (cache miss: gRPC + pg)", "gateway", { url: `${noCache.base}${c.path}` }, { paired: floor });
  hold(miss, floor.result, 0.9);
  await c.bench.stopProc(noCache.proc);
  await rateLimitedRow(c, hit);
  const etag = (await c.bench.api(c.itemUrl)).headers.get("etag");
  if (etag) {
    const r = await c.runner.scenario("item GET, If-None-Match (304)", "gateway", { url: c.itemUrl, headers: { "if-none-match": etag } });
    hold(r, express.result);
  }
  return hit;
}

/**
 * The cache hit at a gateway whose per-token limit is on, far above the load (the stack's other
 * gateways run without it), in turns with the hit at the first gateway: at most 10% slower.
 */
async function rateLimitedRow(c: Ctx, hit: Result): Promise<void> {
  const limited = await c.bench.startGateway("gateway-rate-limited", { VNM_RATE_LIMIT: "100000000" });
  const url = `${limited.base}${c.path}`;
  await c.runner.cannon({ url }, c.stackWarmup);
  const paired = { result: hit, load: { url: c.itemUrl } };
  const row = await c.runner.scenario("item GET /bridges/:id (cache hit, rate limit on)", "gateway", { url }, { cacheBase: limited.base, paired });
  hold(row, hit, 0.9);
  await c.bench.stopProc(limited.proc);
}

/** The cached 100-item collection, with gzip (as HTTP clients ask) and without. */
export async function collectionRows(c: Ctx): Promise<void> {
  const gz = { "accept-encoding": "gzip" };
  // A miss stores the list, the first hit keeps Redis's copy locally, and the coding is made
  // from the kept copy: a few reads until it is sent coded.
  let wire = await wireBytes(c.collUrl, { ...gz, ...c.bench.auth() });
  for (let i = 0; i < 5 && wire.coding !== "gzip"; i++) wire = await wireBytes(c.collUrl, { ...gz, ...c.bench.auth() });
  const name = `cached collection GET /bridges (100 items), Accept-Encoding: gzip (${wire.bytes} B ${wire.coding ?? "uncoded"})`;
  // Each held to express sending the very same bytes, in turns with it.
  const coded = c.baselines.collGzip ?? c.baselines.express;
  const coll = await c.runner.scenario(name, "gateway", { url: c.collUrl, headers: gz }, { cacheBase: c.base, paired: coded });
  hold(coll, coded.result, 0.7);
  // Without Accept-Encoding (wrk's default): the full body.
  const whole = c.baselines.collBody;
  const plain = await c.runner.scenario("cached collection GET /bridges (100 items), no Accept-Encoding", "gateway", { url: c.collUrl }, { cacheBase: c.base, ...(whole ? { paired: whole } : {}) });
  if (whole) {
    hold(plain, whole.result, 0.7);
    c.runner.results.push(tailRow(plain, whole.result, 3));
  }
}

/** A second gateway, the connections split over both; gives its RSS after the run. */
export async function replicaRows(c: Ctx, hit: Result): Promise<number | undefined> {
  const gw2 = await c.bench.startGateway("gateway-2");
  const replicas = await c.runner.scenario("item GET, 2 gateway replicas", "gateway", { url: [c.itemUrl, `${gw2.base}${c.path}`] });
  hold(replicas, hit);
  const rss = rssMb(gw2.proc);
  await c.bench.stopProc(gw2.proc);
  return rss;
}

/** The four growth rows at the table's present size, each in turns with its baseline. */
async function growthStep(c: Ctx, size: number, label: string, group: string, missBase: string): Promise<Step> {
  const { express, floor } = c.baselines;
  const pageUrl = `${c.base}/bridges?limit=100`;
  const fixedUrl = `${c.base}/bridges?tenant_id=${FIXED_TENANT}`;
  await c.bridges.checkList(fixedUrl, c.bridges.fixed.length);
  const page = await c.bench.api(pageUrl);
  const items: unknown = await page.json();
  if (page.status !== 200 || !Array.isArray(items) || items.length !== 100) throw new Error(`${pageUrl}: ${page.status}`);
  const item = await c.runner.scenario(`item GET @${label}`, group, { url: c.itemUrl }, { paired: express });
  const miss = await c.runner.scenario(`item GET, cache miss @${label}`, group, { url: `${missBase}${c.path}` }, { paired: floor });
  const pageRow = await c.runner.scenario(`list page ?limit=100 @${label}`, group, { url: pageUrl }, { cacheBase: c.base, paired: floor });
  const fixed = await c.runner.scenario(`fixed tenant list GET @${label} (10 items)`, group, { url: fixedUrl }, { cacheBase: c.base, paired: express });
  return { size, rows: c.bridges.rows, item, miss, page: pageRow, fixed };
}

/**
 * 1k -> 100k, then back to 1k: the repeat, adjacent in time, is what @100k is held to, each row
 * as its share of the baseline it ran in turns with (bare express for the rows the cache
 * answers, the design floor for those that reach Postgres): two runs minutes apart differ by
 * more than 20% on a machine whose speed drifts, whatever the table size.
 */
export async function growthRows(c: Ctx): Promise<Step[]> {
  const growth: Step[] = [];
  const missGateway = await c.bench.startGateway("gateway-growth-no-item-cache", { VNM_ITEM_CACHE: "false" });
  const sizes = [...GROWTH_SIZES, GROWTH_SIZES[0]];
  for (let step = 0; step < sizes.length; step++) {
    const size = sizes[step]!;
    const again = step === sizes.length - 1;
    if (step > 0) {
      console.error(`# ${again ? "shrinking back" : "growing"} to ${fmt(size)} bridges ${load()}`);
      await (again ? c.bridges.shrinkTo(size) : c.bridges.growTo(size));
      await c.bridges.settle();
    }
    const label = `${size / 1000}k${again ? " again" : ""}`;
    growth.push(await growthStep(c, size, label, `growth-${step}`, missGateway.base));
  }
  await c.bench.stopProc(missGateway.proc);
  const [g100, g1k] = growth.slice(-2);
  if (!g100 || !g1k) throw new Error("the growth steps ran fewer than two sizes");
  for (const row of ["item", "miss", "page", "fixed"] as const) holdGrowth(g100[row], g1k[row]);
  return growth;
}

/**
 * POST, PUT, PATCH and a 90/10 mix of item GETs and PUTs, each checked for its notifications on NATS.
 * POST is held to the durable-write floor in turns with it: both write a bridge and its change
 * notification durably before answering 201.
 */
export async function writeRows(c: Ctx): Promise<void> {
  const { floor, writeFloor } = c.baselines;
  const pg = floor.result;
  if (want("post")) {
    if (!writeFloor) throw new Error("POST runs without the durable-write floor");
    let post!: Result;
    let warm = 0;
    await c.publications.check("POST bridge", "created", "CreateBridge", async () => {
      const l = { url: `${c.base}/bridges`, method: "POST", headers: JSON_TYPE, body: POST_BODY };
      post = await c.runner.scenario("POST /bridges (outbox row + NATS publish)", "writes", l, { paired: writeFloor, onWarmup: (w) => (warm = ok(w)) });
      return warm + post.ok2xx;
    });
    hold(post, writeFloor.result, 0.7);
  }
  const puts: WrkRequest[] = c.bridges.collection.map((id) => ({
    method: "PUT",
    path: `/bridges/${id}`,
    headers: JSON_TYPE,
    body: JSON.stringify({ name: "b2", tenantId: COLL_TENANT, adminStateUp: false }),
  }));
  if (want("put")) {
    let put!: Result;
    let warm = 0;
    await c.publications.check("PUT bridge", "updated", "UpdateBridge", async () => {
      put = await c.runner.scenario("PUT /bridges/:id", "writes", { url: c.base, requests: puts }, { onWarmup: (w) => (warm = ok(w)) });
      return warm + put.ok2xx;
    });
    hold(put, pg);
  }
  if (want("patch")) {
    // A JSON Merge Patch of one field: one call to the bridge service, which reads the item,
    // merges the patch and writes it in one transaction.
    const patches: WrkRequest[] = c.bridges.collection.map((id, i) => ({
      method: "PATCH",
      path: `/bridges/${id}`,
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ adminStateUp: i % 2 === 0 }),
    }));
    let patch!: Result;
    let warm = 0;
    await c.publications.check("PATCH bridge", "updated", "UpdateBridge", async () => {
      patch = await c.runner.scenario("PATCH /bridges/:id (merge patch)", "writes", { url: c.base, requests: patches }, { onWarmup: (w) => (warm = ok(w)) });
      return warm + patch.ok2xx;
    });
    hold(patch, pg);
  }
  if (want("mixed")) {
    // Every connection cycles through 9 item GETs and 1 PUT (of the next id).
    const mix: WrkRequest[] = puts.flatMap((p) => [...Array.from({ length: 9 }, () => ({ path: c.path })), p]);
    let mixed!: Result;
    await c.publications.check("mixed 90/10", "updated", "UpdateBridge", async () => {
      mixed = await c.runner.scenario("mixed 90% item GET / 10% PUT", "writes", { url: c.base, requests: mix });
      return Math.round(mixed.ok2xx / 10); // wrk does not tell the PUTs apart: about one in ten
    });
    hold(mixed, pg);
  }
}
