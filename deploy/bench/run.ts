
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { addressVariable } from "@vnm/kit/repo";
import { DEPS, freePort, type Proc as KitProc, ROOT, serviceDomains, startProcess } from "@vnm/kit/testing";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { connect, type NatsConnection } from "nats";
import pg from "pg";

const BASELINE = "deploy/bench/baseline.ts"; // relative to the repository: run by node, not as a program

/** A BENCH_* setting (read by name: these are no turbo task inputs). */
const setting = (name: string): string | undefined => process.env[`BENCH_${name}`] || undefined;
const SECONDS = Number(setting("SECONDS") ?? 5);
const CONNECTIONS = Number(setting("CONNECTIONS") ?? 32);
const WARMUP = Number(setting("WARMUP") ?? 1);
const CPU_PROF = setting("CPU_PROF") === "1";
const ID = randomBytes(4).toString("hex");
/** Every service found (services/<domain>/src/main.ts), as the test harness does. */
const DOMAINS = serviceDomains();
const schemaOf = (domain: string) => `${domain}_bench_${ID}`;
const SCHEMA = schemaOf("bridge");
const PREFIX = `vnmbench${ID}`;
const STAMP = new Date().toISOString().replace(/[:.]/g, "-");
const RESULTS_DIR = join(ROOT, "bench-results");
const PROF_DIR = join(RESULTS_DIR, `prof-${STAMP}`);
const TMP = mkdtempSync(join(tmpdir(), "vnm-bench-"));

const COLL_TENANT = `bench-coll-${ID}`;
const FIXED_TENANT = `bench-fixed-${ID}`;
const GROWTH_TENANTS = 1000;
const GROWTH_SIZES = [1_000, 10_000, 100_000];
const TOTAL_SCENARIOS = 22;

// ---------------------------------------------------------------------------------------------
// Processes

interface Proc extends KitProc {
  name: string;
}

const procs: Proc[] = [];

function startNode(name: string, script: string, env: NodeJS.ProcessEnv = {}, opts: { nodeArgs?: string[]; args?: string[] } = {}): Proc {
  const p = { name, ...startProcess(script, env, opts.nodeArgs, opts.args) };
  procs.push(p);
  return p;
}

function stopProc(p: Proc): Promise<void> {
  const i = procs.indexOf(p);
  if (i >= 0) procs.splice(i, 1);
  return p.stop();
}

async function waitFor(what: string, p: Proc | undefined, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (p && p.child.exitCode !== null) throw new Error(`${what}: process exited\n${p.output.join("")}`);
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${p?.output.join("") ?? ""}`);
    await sleep(100);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssMb(p: Proc): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.child.pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : undefined;
  } catch {
    return undefined;
  }
}

/** Starts a baseline child and returns its port once it prints READY. */
async function startBaseline(mode: string, config: Record<string, unknown>): Promise<{ proc: Proc; port: number }> {
  const file = join(TMP, `${mode}-${randomBytes(3).toString("hex")}.json`);
  writeFileSync(file, JSON.stringify(config));
  const proc = startNode(`baseline-${mode}`, BASELINE, {}, { args: [mode, file] });
  let port = 0;
  await waitFor(`baseline ${mode}`, proc, async () => {
    const m = /READY (\d+)/.exec(proc.output.join(""));
    if (m) port = Number(m[1]);
    return port > 0;
  });
  return { proc, port };
}

// ---------------------------------------------------------------------------------------------
// The stack

const ADMIN_PASSWORD = randomBytes(12).toString("hex");
const stackEnv = {
  DATABASE_URL: DEPS.databaseUrl,
  NATS_URL: DEPS.natsUrl,
  REDIS_URL: DEPS.redisUrl,
  VNM_BUS_PREFIX: PREFIX,
  VNM_TOKEN_SECRET: randomBytes(24).toString("hex"),
  VNM_ADMIN_PASSWORD: ADMIN_PASSWORD,
  // The bench measures the API, not the limiter: one token sends every request.
  VNM_RATE_LIMIT: "0",
  LOG_LEVEL: "warn",
};

/** The admin token every request carries (set after the first gateway is up). */
let TOKEN = "";
const auth = () => ({ "x-auth-token": TOKEN });

/** fetch with the admin token. */
function api(url: string | URL, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), ...auth() } });
}

async function login(base: string): Promise<string> {
  const r = await fetch(`${base}/login`, {
    method: "POST",
    headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString("base64")}` },
  });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { key: string }).key;
}
/** VNM_<DOMAIN>_ADDR of every service started. */
const addrEnv: Record<string, string> = {};

async function startGateway(label: string): Promise<{ proc: Proc; base: string }> {
  const port = await freePort();
  const nodeArgs = CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`] : [];
  const proc = startNode(label, "gateway/src/main.ts", { ...stackEnv, ...addrEnv, PORT: String(port) }, { nodeArgs });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${label} ${base}/readyz`, proc, async () => (await fetch(`${base}/readyz`)).status === 200);
  return { proc, base };
}

// ---------------------------------------------------------------------------------------------
// Load

interface Result {
  scenario: string;
  group: string;
  url: string;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  baseline?: string;
  ratio?: number;
  note?: string;
  /** RSS (MB) of the gateway and the bridge service right after the run. */
  rss?: { gateway?: number; bridge?: number };
}

const results: Result[] = [];
let rssProbe: () => { gateway?: number; bridge?: number } = () => ({});
let scenarioNo = 0;

type AcOptions = Parameters<typeof autocannon>[0];

async function cannon(opts: AcOptions, seconds: number): Promise<autocannon.Result> {
  const withToken: AcOptions = {
    ...opts,
    headers: { ...opts.headers, ...auth() },
    requests: opts.requests?.map((r) => ({ ...r, headers: { ...r.headers, ...auth() } })),
  };
  return (await autocannon({ connections: CONNECTIONS, ...withToken, duration: seconds })) as autocannon.Result;
}

/** One scenario: a progress line, an unrecorded warm-up, then the measured run. */
async function scenario(
  name: string,
  group: string,
  opts: AcOptions,
  extra: Partial<Result> = {},
  onWarmup?: (r: autocannon.Result) => void,
  cacheBase?: string,
): Promise<Result> {
  scenarioNo++;
  const urls = Array.isArray(opts.url) ? opts.url : [opts.url];
  const conns = (opts.connections as number | undefined) ?? CONNECTIONS;
  const what = opts.requests
    ? `${opts.requests.map((r) => `${r.method ?? "GET"} ${r.path ?? ""}`).filter((v, i, a) => a.indexOf(v) === i).join(" | ")} on ${urls.join(" + ")}`
    : `${opts.method ?? "GET"} ${urls.join(" + ")}`;
  console.log(`[${String(scenarioNo).padStart(2)}/${TOTAL_SCENARIOS}] ${name}: ${what} (${conns} connections, ${SECONDS} s)`);
  if (WARMUP > 0) {
    const w = await cannon(opts, WARMUP);
    onWarmup?.(w);
  }
  const counters = cacheBase ? await cacheCounters(cacheBase) : undefined;
  const r = await cannon(opts, SECONDS);
  if (cacheBase && counters) {
    const after = await cacheCounters(cacheBase);
    const hits = after.hits - counters.hits;
    const misses = after.misses - counters.misses;
    extra = { ...extra, note: `cache hits ${hits}, misses ${misses}` };
  }
  const res: Result = {
    scenario: name,
    group,
    url: urls.join(" + "),
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    ok2xx: r["2xx"],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    ...extra,
    rss: rssProbe(),
  };
  results.push(res);
  return res;
}

// ---------------------------------------------------------------------------------------------
// NATS: every write must be published

const received = { created: 0, updated: 0, deleted: 0, other: 0 };
type Ev = "created" | "updated" | "deleted";

function watchBus(nc: NatsConnection): void {
  const sub = nc.subscribe(`${PREFIX}.>`);
  void (async () => {
    for await (const m of sub) {
      const ev = m.subject.slice(m.subject.lastIndexOf(".") + 1);
      if (ev === "created" || ev === "updated" || ev === "deleted") received[ev]++;
      else received.other++;
    }
  })();
}

interface Publication {
  scenario: string;
  event: Ev;
  /** 2xx responses autocannon saw (warm-up included). */
  acknowledged: number;
  /** Changes committed to the outbox (requests in flight when autocannon stops still commit). */
  committed: number;
  published: number;
  waitedMs: number;
  match: boolean;
}
const publications: Publication[] = [];

/** Outbox rows ever written (the outbox id sequence) and rows not yet relayed. */
async function outbox(): Promise<{ written: number; pending: number }> {
  const r = await db.query(
    `SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ${SCHEMA}.outbox_id_seq) AS written,
            (SELECT count(*) FROM ${SCHEMA}.outbox) AS pending`,
  );
  return { written: Number(r.rows[0].written), pending: Number(r.rows[0].pending) };
}

/** Waits until writes stop landing and the relay has emptied the outbox (at most 15 s). */
async function settle(): Promise<number> {
  const until = Date.now() + 15_000;
  let last = -1;
  for (;;) {
    const o = await outbox();
    if ((o.written === last && o.pending === 0) || Date.now() > until) return o.written;
    last = o.written;
    await sleep(250);
  }
}

/** Runs a write scenario and checks that every committed change was published on the bus. */
async function writeScenario(name: string, event: Ev, run: () => Promise<number>): Promise<void> {
  const seq0 = await settle();
  const rec0 = received[event];
  const acknowledged = await run();
  const t0 = Date.now();
  const committed = (await settle()) - seq0;
  while (received[event] - rec0 < committed && Date.now() - t0 < 15_000) await sleep(50);
  await sleep(200); // anything beyond the committed count would show up now
  const published = received[event] - rec0;
  const p = { scenario: name, event, acknowledged, committed, published, waitedMs: Date.now() - t0, match: published === committed };
  publications.push(p);
  console.log(
    `      ${name}: ${acknowledged} acknowledged (2xx incl. warm-up), ${committed} committed, ${published} "${event}" messages on ${PREFIX}.> (${p.waitedMs} ms after the run)`,
  );
}

/** The gateway's cache counters (GET /metrics). */
async function cacheCounters(base: string): Promise<{ hits: number; misses: number }> {
  const t = await (await api(`${base}/metrics`)).text();
  const num = (name: string) => Number(new RegExp(`^${name} (\\d+)`, "m").exec(t)?.[1] ?? Number.NaN);
  return { hits: num("vnm_cache_hits_total"), misses: num("vnm_cache_misses_total") };
}

// ---------------------------------------------------------------------------------------------
// Output

function fmt(n: number | undefined, digits = 0): string {
  return n === undefined || !Number.isFinite(n) ? "-" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function table(): string {
  const head = ["scenario", "req/s", "p50 ms", "p99 ms", "non2xx/err", "ratio", "ratio to", "note"];
  const rows = results.map((r) => [
    r.scenario,
    fmt(r.rps),
    fmt(r.p50, 1),
    fmt(r.p99, 1),
    `${r.non2xx}/${r.errors + r.timeouts}`,
    r.ratio === undefined ? "" : fmt(r.ratio, 2),
    r.baseline ?? "",
    r.note ?? "",
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 || i >= 6 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join("  ");
  const out = [line(head), w.map((n) => "-".repeat(n)).join("  ")];
  let group = "";
  for (let i = 0; i < rows.length; i++) {
    if (results[i]!.group !== group && group !== "") out.push("");
    group = results[i]!.group;
    out.push(line(rows[i]!));
  }
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

const db = new pg.Client({ connectionString: DEPS.databaseUrl });
let nc: NatsConnection | undefined;
let cleaned = false;

async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await Promise.all([...procs].map(stopProc));
  for (const d of DOMAINS) {
    try {
      await db.query(`DROP SCHEMA IF EXISTS ${schemaOf(d)} CASCADE`);
    } catch (err) {
      console.error(`# drop schema ${schemaOf(d)} failed: ${(err as Error).message}`);
    }
  }
  await db.end().catch(() => {});
  if (nc) {
    try {
      const jsm = await nc.jetstreamManager();
      await jsm.streams.delete(PREFIX.toUpperCase());
    } catch (err) {
      console.error(`# delete stream failed: ${(err as Error).message}`);
    }
    await nc.close().catch(() => {});
  }
  const redis = new Redis(DEPS.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, batch] = await redis.scan(cursor, "MATCH", `${PREFIX}:*`, "COUNT", 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== "0");
    if (keys.length > 0) await redis.del(...keys);
  } catch (err) {
    console.error(`# redis cleanup failed: ${(err as Error).message}`);
  } finally {
    redis.disconnect();
  }
  rmSync(TMP, { recursive: true, force: true });
}

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    console.error(`# ${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const t0 = Date.now();
  console.log(
    `# vnm bench: ${SECONDS} s per scenario (+${WARMUP} s warm-up), ${CONNECTIONS} connections, ${cpus().length} CPUs, node ${process.version}, services ${DOMAINS.join(", ")}, schema ${SCHEMA}, prefix ${PREFIX}`,
  );
  if (CPU_PROF) mkdirSync(PROF_DIR, { recursive: true });
  await db.connect();
  nc = await connect({ servers: DEPS.natsUrl, name: "vnm-bench" });
  watchBus(nc);

  // --- stack
  const services = new Map<string, Proc>();
  for (const d of DOMAINS) addrEnv[addressVariable(d)] = `127.0.0.1:${await freePort()}`;
  for (const d of DOMAINS) {
    const port = addrEnv[addressVariable(d)]!.split(":")[1]!;
    services.set(d, startNode(d, `services/${d}/src/main.ts`, { ...stackEnv, ...addrEnv, GRPC_PORT: port, VNM_DB_SCHEMA: schemaOf(d) }));
  }
  const bridge = services.get("bridge");
  if (!bridge) throw new Error("no bridge service under services/");
  const gw = await startGateway("gateway");
  const base = gw.base;
  TOKEN = await login(base);
  rssProbe = () => ({ gateway: rssMb(gw.proc), bridge: rssMb(bridge) });
  await waitFor("bridges table", bridge, async () => {
    const r = await db.query(`SELECT to_regclass('${SCHEMA}.bridges') AS t`);
    return r.rows[0].t !== null;
  });

  // --- seed (before any GET of the URLs measured below)
  const insert = (tenantSql: string, from: number, to: number) =>
    db.query(
      `INSERT INTO ${SCHEMA}.bridges (id, tenant_id, name)
       SELECT gen_random_uuid(), ${tenantSql}, 'bench-' || g FROM generate_series($1::int, $2::int) AS g`,
      [from, to],
    );
  await insert(`'${COLL_TENANT}'`, 1, 100);
  await insert(`'${FIXED_TENANT}'`, 1, 10);
  let growthRows = 0;
  const growTo = async (total: number) => {
    // Total rows in the table become `total`: the 110 fixed rows plus growth rows spread over
    // GROWTH_TENANTS tenants (gt0000..gt0999), round-robin.
    const target = total - 110;
    if (target > growthRows) {
      await insert(`'gt' || lpad(((g - 1) % ${GROWTH_TENANTS})::text, 4, '0')`, growthRows + 1, target);
      growthRows = target;
    }
    await db.query(`ANALYZE ${SCHEMA}.bridges`);
  };
  const growthTenant = "gt0000";
  const itemId: string = (
    await db.query(`SELECT id FROM ${SCHEMA}.bridges WHERE tenant_id = $1 ORDER BY seq LIMIT 1`, [FIXED_TENANT])
  ).rows[0].id;

  /** Direct SQL bypasses the cache invalidation: one write through the gateway invalidates. */
  const invalidateViaGateway = async () => {
    const r = await api(`${base}/bridges`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "invalidate", tenantId: "bench-invalidate" }),
    });
    if (r.status !== 201) throw new Error(`invalidating POST: ${r.status} ${await r.text()}`);
    const loc = r.headers.get("location")!;
    const d = await api(new URL(new URL(loc).pathname, base), { method: "DELETE" });
    if (d.status !== 204) throw new Error(`invalidating DELETE: ${d.status}`);
  };

  /** Fetches a collection twice (miss, then the cached copy) and checks its size. */
  const checkList = async (url: string, tenant: string) => {
    const n = Number((await db.query(`SELECT count(*) FROM ${SCHEMA}.bridges WHERE tenant_id = $1`, [tenant])).rows[0].count);
    for (let i = 0; i < 2; i++) {
      const r = await api(url);
      const items = (await r.json()) as unknown[];
      if (r.status !== 200 || items.length !== n) throw new Error(`${url}: ${r.status}, ${items.length} items, expected ${n}`);
    }
    return n;
  };

  await growTo(GROWTH_SIZES[0]!);

  // The exact bytes of GET one bridge, for the baselines.
  const itemUrl = `${base}/bridges/${itemId}`;
  const first = await api(itemUrl);
  if (first.status !== 200) throw new Error(`GET ${itemUrl}: ${first.status}`);
  const itemBody = await first.text();
  const itemType = first.headers.get("content-type")!;
  console.log(`# item GET body: ${itemBody.length} B of ${itemType}`);

  // --- baselines
  const protoPath = join(TMP, "echo.proto");
  writeFileSync(
    protoPath,
    `syntax = "proto3";
package bench;
service Echo { rpc Get(Req) returns (Res); }
message Req { string id = 1; }
message Res { string body = 1; }
`,
  );
  const bcfg = { body: itemBody, contentType: itemType, protoPath };
  const path = `/bridges/${itemId}`;
  const runBaseline = async (name: string, mode: string, echo?: { pg: boolean }, body = itemBody) => {
    const started: Proc[] = [];
    let echoAddr: string | undefined;
    if (echo) {
      const e = await startBaseline("echo", {
        ...bcfg,
        pg: echo.pg ? { databaseUrl: DEPS.databaseUrl, schema: SCHEMA, id: itemId } : undefined,
      });
      started.push(e.proc);
      echoAddr = `127.0.0.1:${e.port}`;
    }
    const b = await startBaseline(mode, { ...bcfg, body, echoAddr });
    started.push(b.proc);
    const url = `http://127.0.0.1:${b.port}${path}`;
    const check = await api(url);
    const text = await check.text();
    if (check.status !== 200 || text !== body) throw new Error(`baseline ${name} answers ${check.status} with other bytes`);
    const r = await scenario(name, "baseline", { url });
    for (const p of started) await stopProc(p);
    return r;
  };
  const bHttp = await runBaseline("baseline: node:http", "http");
  const bExpress = await runBaseline("baseline: express", "express");
  await runBaseline("baseline: express+grpc", "express-grpc", { pg: false });
  const bPg = await runBaseline("baseline: express+grpc+pg", "express-grpc", { pg: true });
  // The collection goal compares with bare express (item bytes); this one returns the very
  // bytes of the cached 100-item collection, to show what the body size alone costs.
  const collUrl = `${base}/bridges?tenant_id=${COLL_TENANT}`;
  await checkList(collUrl, COLL_TENANT);
  const collBody = await (await api(collUrl)).text();
  const bExpressColl = await runBaseline(`baseline: express, 100-item body (${collBody.length} B)`, "express", undefined, collBody);
  for (const r of results) {
    if (r !== bHttp) {
      r.baseline = "node:http";
      r.ratio = r.rps / bHttp.rps;
    }
  }

  // --- the gateway at 1,000 bridges
  const rssAtStart = { gateway: rssMb(gw.proc), bridge: rssMb(bridge) };
  const rssAfterFirstLoad: { gateway?: number; bridge?: number } = {};
  // The JIT needs several seconds of the same traffic before a fresh stack runs at its steady
  // pace (the first item GET measured ~25% below the same scenario later in the run).
  const stackWarmup = Math.max(6, 6 * WARMUP);
  console.log(`# warming up the stack (${stackWarmup} s of item GETs and collection GETs, not recorded)`);
  await cannon({ url: itemUrl }, stackWarmup);
  await cannon({ url: collUrl }, stackWarmup / 2);
  Object.assign(rssAfterFirstLoad, rssProbe());
  const item1k = await scenario("item GET", "gateway", { url: itemUrl }, { baseline: "express+grpc+pg" });
  item1k.ratio = item1k.rps / bPg.rps;
  const coll = await scenario("cached collection GET (100 items)", "gateway", { url: collUrl }, { baseline: "express" }, undefined, base);
  coll.ratio = coll.rps / bExpress.rps;

  // --- replicas: a second gateway, autocannon spreads connections over both
  const gw2 = await startGateway("gateway-2");
  const replicas = await scenario(
    "item GET, 2 gateway replicas",
    "gateway",
    { url: [itemUrl, `${gw2.base}${path}`] },
    { baseline: "item GET" },
  );
  replicas.ratio = replicas.rps / item1k.rps;
  const rssGateway2 = rssMb(gw2.proc);
  await stopProc(gw2.proc);

  // --- growth
  // 1k -> 10k -> 100k, then back to 1k (the growth rows added after the 1k step are deleted):
  // the repeat shows how much of a difference is the table size and how much the moment.
  const growth: { size: number; rows: number; tenantListSize: number; item: Result; list: Result; fixed: Result }[] = [];
  const seqAt1k = Number((await db.query(`SELECT max(seq) AS m FROM ${SCHEMA}.bridges`)).rows[0].m);
  const steps = [...GROWTH_SIZES, GROWTH_SIZES[0]!];
  for (let step = 0; step < steps.length; step++) {
    const size = steps[step]!;
    const again = step === steps.length - 1;
    if (again) {
      console.log(`# shrinking back to ${fmt(size)} bridges`);
      await db.query(`DELETE FROM ${SCHEMA}.bridges WHERE tenant_id LIKE 'gt%' AND seq > $1`, [seqAt1k]);
      await db.query(`VACUUM ANALYZE ${SCHEMA}.bridges`);
      await invalidateViaGateway();
    } else if (step > 0) {
      console.log(`# growing to ${fmt(size)} bridges`);
      await growTo(size);
      await invalidateViaGateway();
    }
    const rows = Number((await db.query(`SELECT count(*) FROM ${SCHEMA}.bridges`)).rows[0].count);
    const listUrl = `${base}/bridges?tenant_id=${growthTenant}`;
    const fixedUrl = `${base}/bridges?tenant_id=${FIXED_TENANT}`;
    const tenantListSize = await checkList(listUrl, growthTenant);
    await checkList(fixedUrl, FIXED_TENANT);
    const bytes = (await (await api(listUrl)).text()).length;
    const label = `${size / 1000}k${again ? " again" : ""}`;
    const group = `growth-${step}`;
    const item =
      step === 0
        ? item1k
        : await scenario(`item GET @${label}`, group, { url: itemUrl }, { baseline: "item GET" });
    const list = await scenario(`tenant list GET @${label} (${tenantListSize} items, ${bytes} B)`, group, { url: listUrl }, {}, undefined, base);
    const fixed = await scenario(`fixed tenant list GET @${label} (10 items)`, group, { url: fixedUrl }, {}, undefined, base);
    growth.push({ size, rows, tenantListSize, item, list, fixed });
  }
  const g0 = growth[0]!;
  const g1kAgain = growth[growth.length - 1]!;
  const g100 = growth[growth.length - 2]!;
  for (const g of growth.slice(1)) {
    g.item.ratio = g.item.rps / g0.item.rps;
    g.list.baseline = `tenant list @1k`;
    g.list.ratio = g.list.rps / g0.list.rps;
    g.fixed.baseline = `fixed tenant list @1k`;
    g.fixed.ratio = g.fixed.rps / g0.fixed.rps;
  }

  // --- writes (last, so they do not change the growth sizes)
  const json = { "content-type": "application/json" };
  let post!: Result;
  await writeScenario("POST bridge", "created", async () => {
    let warm = 0;
    post = await scenario(
      "POST bridge",
      "writes",
      { url: `${base}/bridges`, method: "POST", headers: json, body: JSON.stringify({ name: "b", tenantId: "bench" }) },
      { baseline: "item GET" },
      (w) => {
        warm = w["2xx"];
      },
    );
    return warm + post.ok2xx;
  });
  post.ratio = post.rps / item1k.rps;

  const putIds: string[] = (
    await db.query(`SELECT id FROM ${SCHEMA}.bridges WHERE tenant_id = 'bench' ORDER BY seq LIMIT 256`)
  ).rows.map((r: { id: string }) => r.id);
  if (putIds.length === 0) throw new Error("no bridges to PUT");
  let putNo = 0;
  const putRequest = {
    method: "PUT" as const,
    path: "/bridges/{id}",
    headers: json,
    body: JSON.stringify({ name: "b2", tenantId: "bench", adminStateUp: false }),
    setupRequest: (req: Record<string, unknown>) => ({ ...req, path: `/bridges/${putIds[putNo++ % putIds.length]}` }),
  };
  let put!: Result;
  await writeScenario("PUT bridge", "updated", async () => {
    let warm = 0;
    put = await scenario(
      "PUT bridge",
      "writes",
      { url: base, requests: [putRequest] },
      { baseline: "item GET" },
      (w) => {
        warm = w["2xx"];
      },
    );
    return warm + put.ok2xx;
  });
  put.ratio = put.rps / item1k.rps;

  // 90/10: every connection cycles through 9 item GETs and 1 PUT.
  let mixedPuts = 0;
  const mixedRequests = [
    ...Array.from({ length: 9 }, () => ({ method: "GET" as const, path })),
    {
      ...putRequest,
      onResponse: (status: number) => {
        if (status >= 200 && status < 300) mixedPuts++;
      },
    },
  ];
  let mixed!: Result;
  await writeScenario("mixed 90/10", "updated", async () => {
    mixed = await scenario("mixed 90% item GET / 10% PUT", "writes", { url: base, requests: mixedRequests }, { baseline: "item GET" });
    return mixedPuts;
  });
  mixed.ratio = mixed.rps / item1k.rps;

  // --- memory at the end
  const rss = { gateway: rssMb(gw.proc), gateway2AfterReplicaRun: rssGateway2, bridge: rssMb(bridge), atStart: rssAtStart, afterFirstWarmup: rssAfterFirstLoad,
    otherServices: Object.fromEntries([...services].filter(([d]) => d !== "bridge").map(([d, p]) => [d, rssMb(p)])) };
  let streamMessages: number | undefined;
  try {
    const jsm = await nc.jetstreamManager();
    streamMessages = (await jsm.streams.info(PREFIX.toUpperCase())).state.messages;
  } catch {}

  // --- goals
  const within = (a: number, b: number, tol: number) => Math.abs(a - b) / b <= tol;
  const goals = [
    {
      goal: "item GET >= 0.9 x express+grpc+pg baseline",
      pass: item1k.rps >= 0.9 * bPg.rps,
      detail: `${fmt(item1k.rps)} vs ${fmt(bPg.rps)} req/s (${fmt(item1k.rps / bPg.rps, 2)}x)`,
    },
    {
      goal: "cached collection GET >= 0.7 x bare express",
      pass: coll.rps >= 0.7 * bExpress.rps,
      detail: `${fmt(coll.rps)} vs ${fmt(bExpress.rps)} req/s (${fmt(coll.rps / bExpress.rps, 2)}x)`,
    },
    {
      goal: "(info) cached collection GET vs express returning the same 100-item bytes",
      pass: coll.rps >= 0.7 * bExpressColl.rps,
      detail: `${fmt(coll.rps)} vs ${fmt(bExpressColl.rps)} req/s (${fmt(coll.rps / bExpressColl.rps, 2)}x)`,
    },
    {
      goal: "POST >= 0.5 x item GET",
      pass: post.rps >= 0.5 * item1k.rps,
      detail: `${fmt(post.rps)} vs ${fmt(item1k.rps)} req/s (${fmt(post.rps / item1k.rps, 2)}x)`,
    },
    {
      goal: "item GET @100k within 20% of @1k (req/s; @1k = the repeat after shrinking, adjacent in time)",
      pass: within(g100.item.rps, g1kAgain.item.rps, 0.2),
      detail: `${fmt(g100.item.rps)} vs ${fmt(g1kAgain.item.rps)} req/s (${fmt(g100.item.rps / g1kAgain.item.rps, 2)}x; first @1k run: ${fmt(g0.item.rps)} req/s, ${fmt(g100.item.rps / g0.item.rps, 2)}x)`,
    },
    {
      goal: "fixed 10-item tenant list GET @100k within 20% of @1k (req/s; same @1k)",
      pass: within(g100.fixed.rps, g1kAgain.fixed.rps, 0.2),
      detail: `${fmt(g100.fixed.rps)} vs ${fmt(g1kAgain.fixed.rps)} req/s (${fmt(g100.fixed.rps / g1kAgain.fixed.rps, 2)}x; first @1k run: ${fmt(g0.fixed.rps)} req/s, ${fmt(g100.fixed.rps / g0.fixed.rps, 2)}x)`,
    },
    {
      goal: "gateway RSS < 200 MB at the end",
      pass: (rss.gateway ?? Infinity) < 200,
      detail: `${fmt(rss.gateway, 1)} MB`,
    },
    { goal: "service RSS < 150 MB at the end", pass: (rss.bridge ?? Infinity) < 150, detail: `${fmt(rss.bridge, 1)} MB` },
    {
      goal: "every write published on NATS",
      pass: publications.every((p) => p.match),
      detail: publications.map((p) => `${p.scenario} ${p.committed} committed / ${p.published} published`).join(", "),
    },
  ];

  // --- report
  console.log("");
  console.log(table());
  console.log("");
  console.log(
    `growth: ${GROWTH_TENANTS} tenants; the tenant list grows with N (${growth.map((g) => `${g.tenantListSize} items @${fmt(g.rows)} rows`).join(", ")}); the fixed tenant always has 10. Collection GETs are served from the Redis cache after the first miss. The last step deletes back to 1k and measures again.`,
  );
  console.log(
    `NATS: ${publications.map((p) => `${p.scenario}: ${p.acknowledged} acknowledged / ${p.committed} committed / ${p.published} published`).join("; ")}; stream ${PREFIX.toUpperCase()} holds ${streamMessages ?? "?"} messages`,
  );
  console.log(
    `RSS at the end: gateway ${fmt(rss.gateway, 1)} MB, bridge service ${fmt(rss.bridge, 1)} MB (at start: ${fmt(rssAtStart.gateway, 1)} / ${fmt(rssAtStart.bridge, 1)} MB, after the first warm-up: ${fmt(rssAfterFirstLoad.gateway, 1)} / ${fmt(rssAfterFirstLoad.bridge, 1)} MB; second gateway after the replica run: ${fmt(rss.gateway2AfterReplicaRun, 1)} MB)`,
  );
  console.log("");
  for (const g of goals) {
    const info = g.goal.startsWith("(info)");
    console.log(`${info ? "INFO" : g.pass ? "PASS" : "MISS"}  ${info ? g.goal.slice(7) : g.goal}: ${g.detail}`);
  }

  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `bench-${STAMP}.json`);
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        startedAt: startedAt.toISOString(),
        elapsedSeconds: Math.round((Date.now() - t0) / 1000),
        config: { seconds: SECONDS, warmupSeconds: WARMUP, connections: CONNECTIONS, cpus: cpus().length, node: process.version },
        stack: { schema: SCHEMA, prefix: PREFIX, itemId, collectionTenant: COLL_TENANT, fixedTenant: FIXED_TENANT },
        results,
        growth: growth.map((g) => ({
          size: g.size,
          rows: g.rows,
          tenantListSize: g.tenantListSize,
          item: g.item.scenario,
          list: g.list.scenario,
          fixed: g.fixed.scenario,
        })),
        publications,
        streamMessages,
        rssMb: rss,
        goals,
        cpuProfiles: CPU_PROF ? PROF_DIR : undefined,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\n# results: ${file} (${Math.round((Date.now() - t0) / 1000)} s)`);
}

try {
  await main();
} catch (err) {
  console.error(`bench failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
