// npm run bench: the stack against baselines on this machine, every figure from wrk (Debian's,
// installed when missing) so the load generator takes no CPU from Node: the paths, their ratios
// to the baselines of the same run and their goals (docs/perf/README.md), one table and one JSON per run.

import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { get as httpGet } from "node:http";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { reclaimPeriodSeconds, streamNames } from "@vnm/kit";
import { addressVariable, NODE_FLAGS } from "@vnm/kit/repo";
import { DEPS, deleteStreams, freePort, type Proc as KitProc, ROOT, serviceDomains, startProcess } from "@vnm/kit/testing";
import { build, linkModules } from "../build.ts";
import { CpuAccount, describeCpu, sampleCpu } from "./cpu.ts";
import { ensureWrk, inSequence, type WrkRequest, type WrkResult, wrk, wrkTogether } from "./wrk.ts";
import { Redis } from "ioredis";
import { connect, type NatsConnection } from "nats";
import pg from "pg";

const BASELINE = "deploy/bench/baseline.ts"; // relative to the repository: run by node, not as a program

/** A BENCH_* setting (read by name: these are no turbo task inputs). */
const setting = (name: string): string | undefined => process.env[`BENCH_${name}`] || undefined;
const SECONDS = Number(setting("SECONDS") ?? 10);
const CONNECTIONS = Number(setting("CONNECTIONS") ?? 32);
/**
 * Unrecorded seconds before each scenario. A path the JIT has not seen runs slow at first: a fresh
 * design floor ran 1,309 and 934 req/s in its first 3 s against 2,700-3,700 from its 10th second
 * on, and POST /bridges on a stack warmed with GETs 626 req/s in its first 5 s against 860-1,120
 * after (docs/perf/README.md).
 */
const WARMUP = Number(setting("WARMUP") ?? 5);
/**
 * A row held to a baseline's rate is measured in PAIR_ROUNDS turns with that baseline: each
 * turn runs the baseline and the row for SECONDS / PAIR_ROUNDS each, in alternating order, and
 * the ratio compares their sums. Measured minutes apart, a ratio carries the machine's drift
 * (one design floor measured 3,750 and 2,718 req/s at its peak in two runs four minutes apart).
 */
const PAIR_ROUNDS = Number(setting("PAIR_ROUNDS") ?? 5);
if (!Number.isInteger(PAIR_ROUNDS) || PAIR_ROUNDS < 1) throw new Error(`BENCH_PAIR_ROUNDS=${setting("PAIR_ROUNDS")}: a whole number, 1 or more`);
const CPU_PROF = setting("CPU_PROF") === "1";
/** Preloads deploy/bench/memory-probe.ts into the gateway and the bridge service and reports what their idle memory is made of. */
const MEM_PROBE = setting("MEM_PROBE") === "1";
const PROBE = "deploy/bench/memory-probe.ts";
/**
 * What the gateway and the services run from: "compiled" (the default) is the stack as the image
 * ships it, the JavaScript deploy/build.ts produces, so no process pays for TypeScript's type
 * stripping (~20 MB each, docs/perf/memory.md); "sources" runs the .ts files as `npm start` does.
 */
const FROM = setting("FROM") ?? "compiled";
if (FROM !== "compiled" && FROM !== "sources") throw new Error(`BENCH_FROM=${FROM}: compiled or sources`);
/**
 * A folder two benches share to start each scenario together (BENCH_SYNC=/tmp/x on both, same
 * --only): two builds measured side by side see the same machine. A virtual machine's CPU speed
 * drifts by tens of percent from minute to minute, more than most changes are worth, and runs
 * one after the other cannot tell such a change from the drift (docs/perf/README.md).
 */
const SYNC = setting("SYNC");
/** Node flags for the gateway and the services on top of NODE_FLAGS (space-separated), to compare flags. */
const EXTRA_FLAGS = (setting("NODE_FLAGS") ?? "").split(" ").filter(Boolean);
/** The goal for a gateway's or a service's RSS when idle (docs/perf/memory.md). */
const IDLE_GOAL_MB = 100;
const ID = randomBytes(4).toString("hex");
/** Every service found (services/<domain>/src/main.ts), as the test harness does. */
const DOMAINS = serviceDomains();
const schemaOf = (domain: string) => `${domain}_bench_${ID}`;
const SCHEMA = schemaOf("bridge");
const PREFIX = `vnmbench${ID}`;
const STAMP = new Date().toISOString().replace(/[:.]/g, "-");
const RESULTS_DIR = join(ROOT, "deploy/bench/results");
const PROF_DIR = join(RESULTS_DIR, `prof-${STAMP}`);
const TMP = mkdtempSync(join(tmpdir(), "vnm-bench-"));
/** Where the compiled stack is built (BENCH_FROM=compiled). */
const BUILD = join(TMP, "build");
/** The memory probe, as JavaScript for a compiled stack (a .ts preload would bring type stripping back). */
const PROBE_ARGS = !MEM_PROBE ? [] : ["--import", FROM === "sources" ? `./${PROBE}` : join(BUILD, "memory-probe.js")];

/** Builds the stack as the image does (deploy/build.ts) into BUILD, runnable here. */
function buildStack(): void {
  build(BUILD, "warn");
  linkModules(BUILD);
  if (MEM_PROBE) writeFileSync(join(BUILD, "memory-probe.js"), stripTypeScriptTypes(readFileSync(join(ROOT, PROBE), "utf8")));
}

const COLL_TENANT = `bench-coll-${ID}`;
const FIXED_TENANT = `bench-fixed-${ID}`;
const GROWTH_TENANTS = 1000;
const GROWTH_SIZES = [1_000, 100_000];
/** The paths `--only` selects (comma-separated or repeated). The express and design-floor
 * baselines always run: every ratio needs them. */
const PATHS = ["baselines", "item", "collection", "replicas", "growth", "post", "put", "mixed"] as const;
function onlyArg(): string[] | undefined {
  const picked: string[] = [];
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--only") picked.push(...(argv[++i] ?? "").split(","));
    else if (a.startsWith("--only=")) picked.push(...a.slice(7).split(","));
    else throw new Error(`unknown argument ${a}; usage: npm run bench [-- --only ${PATHS.join("|")}[,...]]`);
  }
  for (const p of picked) if (!(PATHS as readonly string[]).includes(p)) throw new Error(`--only ${p}: one of ${PATHS.join(", ")}`);
  return picked.length > 0 ? picked : undefined;
}
const ONLY = onlyArg();
const want = (path: (typeof PATHS)[number]) => !ONLY || ONLY.includes(path);

// ---------------------------------------------------------------------------------------------
// Processes

interface Proc extends KitProc {
  name: string;
}

const procs: Proc[] = [];

/** The bench's running children, labelled for the CPU figures: the stack's services but the bridge count together. */
function ownProcesses(): [string, number | undefined][] {
  return procs.map((p) => [p.name !== "bridge" && DOMAINS.includes(p.name) ? "other services" : p.name, p.child.pid]);
}

function startNode(name: string, script: string, env: NodeJS.ProcessEnv = {}, opts: { nodeArgs?: string[]; args?: string[] } = {}): Proc {
  const p = { name, ...startProcess(script, env, opts.nodeArgs, opts.args) };
  procs.push(p);
  return p;
}

/** Starts the gateway or a service (`gateway/src/main.ts`, `services/<d>/src/main.ts`) from what BENCH_FROM says. */
function startStack(name: string, script: string, env: NodeJS.ProcessEnv, nodeArgs: string[]): Proc {
  if (FROM === "sources") return startNode(name, script, env, { nodeArgs: [...EXTRA_FLAGS, ...nodeArgs] });
  const js = join(BUILD, script.replace(/\.ts$/, ".js"));
  const p = { name, ...startProcess(process.execPath, env, [], [...NODE_FLAGS, ...EXTRA_FLAGS, ...nodeArgs, js]) };
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

/** RSS once it has stopped moving: two readings 2 s apart within 1 MB of each other (at most 20 s). */
async function settledRss<T extends Record<string, number | undefined>>(read: () => T): Promise<T> {
  let last = read();
  for (let i = 0; i < 10; i++) {
    await sleep(2_000);
    const now = read();
    if (Object.keys(now).every((k) => Math.abs((now[k] ?? 0) - (last[k] ?? 0)) < 1)) return now;
    last = now;
  }
  return last;
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

/** The bytes a GET's answer carries on the wire (content coding kept) and its Content-Encoding. */
function wireBytes(url: string, headers: Record<string, string>): Promise<{ bytes: number; coding?: string }> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers: { ...headers, ...auth() } }, (res) => {
      let bytes = 0;
      res.on("data", (d: Buffer) => {
        bytes += d.length;
      });
      res.on("end", () => resolve({ bytes, coding: res.headers["content-encoding"] }));
    }).on("error", reject);
  });
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

async function startGateway(label: string, env: NodeJS.ProcessEnv = {}): Promise<{ proc: Proc; base: string }> {
  const port = await freePort();
  const nodeArgs = [...PROBE_ARGS, ...(CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`] : [])];
  const proc = startStack(label, "gateway/src/main.ts", { ...stackEnv, ...addrEnv, PORT: String(port), ...env }, nodeArgs);
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
  /** The machine's load averages (1, 5, 15 min) when the run ended: other work on the cores shows here. */
  load?: string;
  /** The goal this row is held to, e.g. ">= 0.9 x baseline: express+grpc+pg", and whether it was met. */
  goal?: string;
  pass?: boolean;
  /** RSS (MB) of the gateway and the bridge service right after the run. */
  rss?: { gateway?: number; bridge?: number };
  /** Measured in turns with this baseline (PAIR_ROUNDS): its rate over the same turns. */
  paired?: { baseline: string; rps: number; rounds: number; secondsEach: number; turns: { rps: number; baselineRps: number }[] };
  /** CPU microseconds (user + system, from /proc) each process used per request while the row ran, its turns only when paired. */
  cpuUs?: Record<string, number>;
}

const results: Result[] = [];
/** The load averages from /proc/loadavg. */
const load = () => `load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`;
let rssProbe: () => { gateway?: number; bridge?: number } = () => ({});
let scenarioNo = 0;

/** A load: full URLs (several: one wrk per URL, connections split, figures summed) and the
 * request, or a cycle of requests (paths relative to each URL's origin). */
interface Load {
  url: string | string[];
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  requests?: WrkRequest[];
  connections?: number;
}

let WRK = "";
/** What ran, for the output: compiled or sources, and the Node flags. */
const stackDescription = `from ${FROM === "compiled" ? "the compiled JavaScript (deploy/build.ts, as the image; BENCH_FROM=sources for the .ts files)" : "the TypeScript sources (BENCH_FROM=sources)"} with node ${[...NODE_FLAGS, ...EXTRA_FLAGS].join(" ")}`;

async function cannon(load: Load, seconds: number): Promise<WrkResult> {
  const urls = Array.isArray(load.url) ? load.url : [load.url];
  const conns = load.connections ?? CONNECTIONS;
  const runs = urls.map((u, i) => {
    const url = new URL(u);
    const requests = load.requests ?? [{ method: load.method, path: `${url.pathname}${url.search}`, headers: load.headers, body: load.body }];
    const share = Math.floor(conns / urls.length) + (i < conns % urls.length ? 1 : 0);
    return { origin: url.origin, requests, headers: auth(), connections: share, seconds };
  });
  return runs.length === 1 ? wrk(WRK, TMP, runs[0]!) : wrkTogether(WRK, TMP, runs);
}

const ok = (r: WrkResult) => r.requests - r.non2xx;

/** Waits (up to 5 minutes) until the other bench sharing `dir` has reached scenario `n` too. */
async function together(dir: string, n: number): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${n}.${process.pid}`), "");
  const until = Date.now() + 300_000;
  while (readdirSync(dir).filter((f) => f.startsWith(`${n}.`)).length < 2) {
    if (Date.now() > until) throw new Error(`BENCH_SYNC: no other bench reached scenario ${n} in ${dir}`);
    await sleep(50);
  }
}

/** A baseline kept running, to be measured in turns with a row held to it. */
interface Baseline {
  result: Result;
  load: Load;
}

/**
 * One scenario: a progress line, an unrecorded warm-up, then the measured run; with `paired`,
 * the run alternates with that baseline's (PAIR_ROUNDS turns) and the row records both rates.
 */
async function scenario(
  name: string,
  group: string,
  opts: Load,
  extra: Partial<Result> = {},
  onWarmup?: (r: WrkResult) => void,
  cacheBase?: string,
  paired?: Baseline,
): Promise<Result> {
  scenarioNo++;
  const urls = Array.isArray(opts.url) ? opts.url : [opts.url];
  const conns = opts.connections ?? CONNECTIONS;
  const what = opts.requests
    ? `${opts.requests.map((r) => `${r.method ?? "GET"} ${r.path.replace(/[0-9a-f-]{36}/g, "{id}")}`).filter((v, i, a) => a.indexOf(v) === i).join(" | ")} on ${urls.join(" + ")}`
    : `${opts.method ?? "GET"} ${urls.join(" + ")}`;
  if (SYNC) await together(SYNC, scenarioNo);
  console.error(`[${String(scenarioNo).padStart(2)}] ${name}: ${what} (wrk, ${conns} connections, ${SECONDS} s) ${load()}`);
  if (WARMUP > 0) {
    const w = await cannon(opts, WARMUP);
    onWarmup?.(w);
  }
  const counters = cacheBase ? await cacheCounters(cacheBase) : undefined;
  const cpu = new CpuAccount();
  const measured = async (seconds: number) => {
    const before = sampleCpu(ownProcesses());
    const m = await cannon(opts, seconds);
    cpu.add(before, sampleCpu(ownProcesses()), m.requests);
    return m;
  };
  let r: WrkResult;
  if (paired) {
    const secondsEach = Math.max(1, Math.round(SECONDS / PAIR_ROUNDS));
    await cannon(paired.load, Math.min(WARMUP, 2));
    const mine: WrkResult[] = [];
    const theirs: WrkResult[] = [];
    for (let i = 0; i < PAIR_ROUNDS; i++) {
      // Baseline first in even turns, the row first in odd ones: a steady drift favours neither.
      if (i % 2 === 0) theirs.push(await cannon(paired.load, secondsEach));
      mine.push(await measured(secondsEach));
      if (i % 2 === 1) theirs.push(await cannon(paired.load, secondsEach));
    }
    r = inSequence(mine);
    const turns = mine.map((m, i) => ({ rps: Math.round(m.rps), baselineRps: Math.round(theirs[i]!.rps) }));
    extra = { ...extra, paired: { baseline: paired.result.scenario, rps: Math.round(inSequence(theirs).rps), rounds: PAIR_ROUNDS, secondsEach, turns } };
  } else r = await measured(SECONDS);
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
    rps: Math.round(r.rps),
    p50: r.p50,
    p99: r.p99,
    requests: r.requests,
    ok2xx: ok(r),
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    load: load(),
    ...extra,
    rss: rssProbe(),
    cpuUs: cpu.perRequest(),
  };
  results.push(res);
  return res;
}

// ---------------------------------------------------------------------------------------------
// NATS: every write must be published

type Ev = "created" | "updated" | "deleted";

/**
 * Messages of one event the deployment's change stream holds (JetStream counts them per
 * subject). Read from the stream after a run rather than heard live: a subscriber in this
 * process took 3% of a core during the writes, CPU the stack under test needs.
 */
async function storedMessages(event: Ev): Promise<number> {
  const jsm = await nc!.jetstreamManager();
  const info = await jsm.streams.info(streamNames(PREFIX)[0], { subjects_filter: `${PREFIX}.*.*.${event}` });
  return Object.values(info.state.subjects ?? {}).reduce((a, n) => a + n, 0);
}

interface Publication {
  scenario: string;
  event: Ev;
  /** 2xx/3xx responses wrk saw (warm-up included). */
  acknowledged: number;
  /** Changes committed to the outbox (requests in flight when wrk stops still commit). */
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
  const stored0 = await storedMessages(event);
  const acknowledged = await run();
  const t0 = Date.now();
  const committed = (await settle()) - seq0;
  while ((await storedMessages(event)) - stored0 < committed && Date.now() - t0 < 15_000) await sleep(50);
  await sleep(200); // anything beyond the committed count would show up now
  const published = (await storedMessages(event)) - stored0;
  const p = { scenario: name, event, acknowledged, committed, published, waitedMs: Date.now() - t0, match: published === committed };
  publications.push(p);
  console.log(
    `      ${name}: ${acknowledged} acknowledged (2xx incl. warm-up), ${committed} committed, ${published} "${event}" messages stored in ${streamNames(PREFIX)[0]} (${p.waitedMs} ms after the run)`,
  );
}

/** What a process started with the memory probe says its memory is made of. */
async function probeMemory(p: Proc): Promise<unknown> {
  const seen = p.output.length;
  p.child.kill("SIGUSR2");
  for (let i = 0; i < 50; i++) {
    await sleep(100);
    const m = /MEMPROBE (.*)/.exec(p.output.slice(seen).join(""));
    if (m) return JSON.parse(m[1]!);
  }
  return undefined;
}

/** The gateway's cache counters (GET /metrics). */
async function cacheCounters(base: string): Promise<{ hits: number; misses: number }> {
  const t = await (await api(`${base}/metrics`)).text();
  const num = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, "m").exec(t)?.[1] ?? Number.NaN);
  return { hits: num("vnm_cache_hits_total"), misses: num("vnm_cache_misses_total") };
}

// ---------------------------------------------------------------------------------------------
// Output

function fmt(n: number | undefined, digits = 0): string {
  return n === undefined || !Number.isFinite(n) ? "-" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * Holds a row to a goal: its req/s over `base`'s at least `min`; over the baseline's rate in the
 * same turns when the row was measured paired with it.
 */
function hold(r: Result, base: Result, min?: number): void {
  r.baseline = base.scenario;
  r.ratio = r.rps / (r.paired?.baseline === base.scenario ? r.paired.rps : base.rps);
  if (min === undefined) return;
  r.goal = `>= ${min} x ${base.scenario}`;
  r.pass = r.ratio >= min;
}

/**
 * Holds a row measured at one table size to the same row at another: each as its share of the
 * baseline it ran in turns with, within 20% of each other.
 */
function holdGrowth(r: Result, than: Result): void {
  const share = (x: Result) => x.rps / (x.paired?.rps ?? Number.NaN);
  r.baseline = than.scenario;
  r.ratio = share(r) / share(than);
  r.goal = `within 20% of ${than.scenario}, each over its baseline in the same turns`;
  r.pass = r.ratio >= 0.8 && r.ratio <= 1.2;
}

/** The row's share of its baseline in each turn, lowest to highest: how far one turn can be off. */
function turnShares(p: NonNullable<Result["paired"]>): string {
  const shares = p.turns.map((t) => t.rps / t.baselineRps).sort((a, b) => a - b);
  return `${fmt(shares[0], 2)}-${fmt(shares[shares.length - 1], 2)} of it`;
}

/** A ratio as printed: three decimals where it is held to a goal (0.4988 reads 0.499, not 0.50 beside its FAIL). */
function ratioText(r: Result): string {
  return r.ratio === undefined ? "" : fmt(r.ratio, r.pass === undefined ? 2 : 3);
}

function table(): string {
  const head = ["path", "req/s", "p50 ms", "p99 ms", "non2xx/err", "ratio", "goal", "", "note"];
  const rows = results.map((r) => [
    r.scenario,
    fmt(r.rps),
    fmt(r.p50, 1),
    fmt(r.p99, 1),
    `${r.non2xx}/${r.errors + r.timeouts}`,
    ratioText(r),
    r.goal ?? (r.baseline ? `(of ${r.baseline})` : ""),
    r.pass === undefined ? "" : r.pass ? "PASS" : "FAIL",
    [r.note, r.paired ? `baseline in the same turns: ${fmt(r.paired.rps)} req/s (${r.paired.rounds} x ${r.paired.secondsEach} s each; turns ${turnShares(r.paired)})` : undefined, r.load].filter(Boolean).join("; "),
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
      for (const failed of await deleteStreams(nc, PREFIX)) console.error(`# delete stream failed: ${failed}`);
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
  console.error(
    `# vnm bench (wrk): ${ONLY ? `only ${ONLY.join(", ")}; ` : ""}${SECONDS} s per scenario (+${WARMUP} s warm-up), ${CONNECTIONS} connections, ${cpus().length} CPUs, node ${process.version}, services ${DOMAINS.join(", ")}, schema ${SCHEMA}, prefix ${PREFIX}, ${load()}`,
  );
  console.error(`# the stack runs ${stackDescription}`);
  if (FROM === "compiled") buildStack();
  if (CPU_PROF) mkdirSync(PROF_DIR, { recursive: true });
  WRK = ensureWrk();
  await db.connect();
  nc = await connect({ servers: DEPS.natsUrl, name: "vnm-bench" });

  // --- stack
  const services = new Map<string, Proc>();
  for (const d of DOMAINS) addrEnv[addressVariable(d)] = `127.0.0.1:${await freePort()}`;
  for (const d of DOMAINS) {
    const port = addrEnv[addressVariable(d)]!.split(":")[1]!;
    const nodeArgs = d !== "bridge" ? [] : [...PROBE_ARGS, ...(CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`] : [])];
    const env = { ...stackEnv, ...addrEnv, GRPC_PORT: port, VNM_DB_SCHEMA: schemaOf(d) };
    services.set(d, startStack(d, `services/${d}/src/main.ts`, env, nodeArgs));
  }
  const bridge = services.get("bridge");
  if (!bridge) throw new Error("no bridge service under services/");
  const gw = await startGateway("gateway");
  const base = gw.base;
  // The identity service may still be starting when the gateway is ready: retry the login.
  await waitFor("the admin's login", undefined, async () => {
    TOKEN = await login(base);
    return true;
  });
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
  };
  /**
   * After the table changed size: VACUUM ANALYZE (autovacuum, which a deployment runs, is off on
   * this machine: rows would be checked for visibility and their hint bits written by the
   * first reads) and a CHECKPOINT, so neither the pages to clean nor a timed checkpoint of the
   * change's WAL lands in the rows measured next.
   */
  const settleTable = async () => {
    await db.query(`VACUUM ANALYZE ${SCHEMA}.bridges`);
    await db.query("CHECKPOINT").catch((err: Error) => console.error(`# CHECKPOINT: ${err.message} (needs a superuser or pg_checkpoint)`));
  };
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
  await settleTable();

  // The exact bytes of GET one bridge, for the baselines.
  const itemUrl = `${base}/bridges/${itemId}`;
  const first = await api(itemUrl);
  if (first.status !== 200) throw new Error(`GET ${itemUrl}: ${first.status}`);
  const itemBody = await first.text();
  const itemType = first.headers.get("content-type")!;
  console.error(`# item GET body: ${itemBody.length} B of ${itemType}`);

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
  /** Measures a baseline; with `keep`, its processes stay up for the rows measured in turns with it. */
  const runBaseline = async (name: string, mode: string, echo?: { pg: boolean }, body = itemBody, keep = false): Promise<Baseline> => {
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
    if (!keep) for (const p of started) await stopProc(p);
    return { result: r, load: { url } };
  };
  // Quiet first: each process of the stack gives back its start-up memory after a whole quiet
  // period (VNM_RECLAIM_IDLE_SECONDS, services/kit/src/memory.ts), a full GC that would
  // otherwise take CPU from a baseline's run.
  const reclaimSeconds = reclaimPeriodSeconds();
  if (reclaimSeconds > 0) {
    const wait = 2 * reclaimSeconds + 2;
    console.error(`# letting the stack go quiet for ${wait} s (it gives back its start-up memory) ${load()}`);
    await new Promise((r) => setTimeout(r, wait * 1000));
  }
  if (want("baselines")) await runBaseline("baseline: node:http", "http");
  const express = await runBaseline("baseline: express", "express", undefined, itemBody, true);
  const bExpress = express.result;
  if (want("baselines")) await runBaseline("baseline: express+grpc", "express-grpc", { pg: false });
  const floor = await runBaseline("baseline: express+grpc+pg (the design floor)", "express-grpc", { pg: true }, itemBody, true);
  const bPg = floor.result;
  // The collection goal compares with bare express (item bytes); this one returns the very
  // bytes of the cached 100-item collection, to show what the body size alone costs.
  const collUrl = `${base}/bridges?tenant_id=${COLL_TENANT}`;
  await checkList(collUrl, COLL_TENANT);
  let bCollBody: Result | undefined;
  if (want("baselines") || want("collection")) {
    const collBody = await (await api(collUrl)).text();
    bCollBody = (await runBaseline(`baseline: express, 100-item body (${collBody.length} B)`, "express", undefined, collBody)).result;
  }
  for (const r of results) if (r !== bExpress) hold(r, bExpress);

  // --- idle: the stack has been up through the quiet wait and the baselines (a minute or more)
  // with a few requests (the seeding checks); read once RSS has settled (under 1 MB of change
  // over 2 s, at most 20 s).
  const rssIdle = await settledRss(rssProbe);
  const idleOthers = Object.fromEntries([...services].filter(([d]) => d !== "bridge").map(([d, p]) => [d, rssMb(p)]));
  console.error(`# idle RSS: gateway ${fmt(rssIdle.gateway, 1)} MB, bridge service ${fmt(rssIdle.bridge, 1)} MB ${load()}`);

  // --- the gateway at 1,000 bridges
  const idle = MEM_PROBE ? { gateway: await probeMemory(gw.proc), bridge: await probeMemory(bridge) } : undefined;
  if (idle) console.error(`# idle memory: ${JSON.stringify(idle)}`);
  const rssAfterFirstLoad: { gateway?: number; bridge?: number } = {};
  // The JIT needs several seconds of the same traffic before a fresh stack runs at its steady
  // pace (the first item GET measured ~25% below the same scenario later in the run).
  const stackWarmup = Math.max(6, 2 * WARMUP);
  console.error(`# warming up the stack (${stackWarmup} s of item GETs and collection GETs, not recorded) ${load()}`);
  await cannon({ url: itemUrl }, stackWarmup);
  await cannon({ url: collUrl }, stackWarmup / 2);
  Object.assign(rssAfterFirstLoad, rssProbe());
  const item1k = await scenario("item GET /bridges/:id (cache hit)", "gateway", { url: itemUrl }, {}, undefined, base, express);
  hold(item1k, bExpress, 0.7);
  if (want("item")) {
    // The miss path: a gateway that answers every item GET with its gRPC call.
    const noCache = await startGateway("gateway-no-item-cache", { VNM_ITEM_CACHE: "false" });
    await cannon({ url: `${noCache.base}${path}` }, stackWarmup);
    const miss = await scenario("item GET /bridges/:id (cache miss: gRPC + pg)", "gateway", { url: `${noCache.base}${path}` }, {}, undefined, undefined, floor);
    hold(miss, bPg, 0.9);
    await stopProc(noCache.proc);
    const etag = (await api(itemUrl)).headers.get("etag");
    if (etag) {
      const r = await scenario("item GET, If-None-Match (304)", "gateway", { url: itemUrl, headers: { "if-none-match": etag } });
      hold(r, bExpress);
    }
  }
  if (want("collection")) {
    // As HTTP clients ask (curl --compressed, browsers, Go, Python requests, Node's fetch): the
    // gateway sends the gzip coding made once from its kept copy. Held to the issue's goal.
    const gz = { "accept-encoding": "gzip" };
    // A miss stores the list, the first hit keeps Redis's copy locally, and the coding is made
    // from the kept copy: a few reads until it is sent coded.
    let wire = await wireBytes(collUrl, gz);
    for (let i = 0; i < 5 && wire.coding !== "gzip"; i++) wire = await wireBytes(collUrl, gz);
    const coll = await scenario(`cached collection GET /bridges (100 items), Accept-Encoding: gzip (${wire.bytes} B ${wire.coding ?? "uncoded"})`, "gateway", { url: collUrl, headers: gz }, {}, undefined, base, express);
    hold(coll, bExpress, 0.7);
    // Without Accept-Encoding (wrk's default): the full body, next to express sending the same
    // bytes (no goal: the body's own cost leaves no gateway at 0.7 of bare express).
    const plain = await scenario("cached collection GET /bridges (100 items), no Accept-Encoding", "gateway", { url: collUrl }, {}, undefined, base);
    hold(plain, bCollBody!);
  }

  // --- replicas: a second gateway, the connections split over both
  let rssGateway2: number | undefined;
  if (want("replicas")) {
    const gw2 = await startGateway("gateway-2");
    const replicas = await scenario("item GET, 2 gateway replicas", "gateway", { url: [itemUrl, `${gw2.base}${path}`] });
    hold(replicas, item1k);
    rssGateway2 = rssMb(gw2.proc);
    await stopProc(gw2.proc);
  }

  // --- growth
  // 1k -> 100k, then back to 1k (the growth rows are deleted): the repeat, adjacent in time,
  // is what @100k is held to. Each row is measured in turns with a baseline (bare express for
  // the rows the cache answers, the design floor for those that reach Postgres) and compared
  // as its share of that baseline: two 10 s runs minutes apart differ by more than 20% on this
  // machine whatever the table size (docs/perf/README.md).
  type Step = { size: number; rows: number; item: Result; miss: Result; page: Result; fixed: Result };
  const growth: Step[] = [];
  if (want("growth")) {
    const seqAt1k = Number((await db.query(`SELECT max(seq) AS m FROM ${SCHEMA}.bridges`)).rows[0].m);
    const missGateway = await startGateway("gateway-growth-no-item-cache", { VNM_ITEM_CACHE: "false" });
    const steps = [...GROWTH_SIZES, GROWTH_SIZES[0]!];
    for (let step = 0; step < steps.length; step++) {
      const size = steps[step]!;
      const again = step === steps.length - 1;
      if (again) {
        console.error(`# shrinking back to ${fmt(size)} bridges ${load()}`);
        await db.query(`DELETE FROM ${SCHEMA}.bridges WHERE tenant_id LIKE 'gt%' AND seq > $1`, [seqAt1k]);
        await settleTable();
        await invalidateViaGateway();
      } else if (step > 0) {
        console.error(`# growing to ${fmt(size)} bridges ${load()}`);
        await growTo(size);
        await settleTable();
        await invalidateViaGateway();
      }
      const rows = Number((await db.query(`SELECT count(*) FROM ${SCHEMA}.bridges`)).rows[0].count);
      const pageUrl = `${base}/bridges?limit=100`;
      const fixedUrl = `${base}/bridges?tenant_id=${FIXED_TENANT}`;
      await checkList(fixedUrl, FIXED_TENANT);
      const page = await api(pageUrl);
      if (page.status !== 200 || ((await page.json()) as unknown[]).length !== 100) throw new Error(`${pageUrl}: ${page.status}`);
      const label = `${size / 1000}k${again ? " again" : ""}`;
      const group = `growth-${step}`;
      const item = await scenario(`item GET @${label}`, group, { url: itemUrl }, {}, undefined, undefined, express);
      const miss = await scenario(`item GET, cache miss @${label}`, group, { url: `${missGateway.base}${path}` }, {}, undefined, undefined, floor);
      const pageR = await scenario(`list page ?limit=100 @${label}`, group, { url: pageUrl }, {}, undefined, base, floor);
      const fixed = await scenario(`fixed tenant list GET @${label} (10 items)`, group, { url: fixedUrl }, {}, undefined, base, express);
      growth.push({ size, rows, item, miss, page: pageR, fixed });
    }
    await stopProc(missGateway.proc);
    // @100k is held to the @1k repeat right after it (adjacent in time), within 20%.
    const g1k = growth[growth.length - 1]!;
    const g100 = growth[growth.length - 2]!;
    for (const row of ["item", "miss", "page", "fixed"] as const) holdGrowth(g100[row], g1k[row]);
  }

  // --- writes (last, so they do not change the growth sizes)
  const json = { "content-type": "application/json" };
  if (want("post")) {
    let post!: Result;
    await writeScenario("POST bridge", "created", async () => {
      let warm = 0;
      post = await scenario(
        "POST /bridges (outbox row + NATS publish)",
        "writes",
        { url: `${base}/bridges`, method: "POST", headers: json, body: JSON.stringify({ name: "b", tenantId: "bench" }) },
        {},
        (w) => {
          warm = ok(w);
        },
        undefined,
        floor,
      );
      return warm + post.ok2xx;
    });
    hold(post, bPg, 0.5);
  }

  const putIds: string[] = (
    await db.query(`SELECT id FROM ${SCHEMA}.bridges WHERE tenant_id = $1 ORDER BY seq LIMIT 256`, [COLL_TENANT])
  ).rows.map((r: { id: string }) => r.id);
  const putRequests: WrkRequest[] = putIds.map((id) => ({
    method: "PUT",
    path: `/bridges/${id}`,
    headers: json,
    body: JSON.stringify({ name: "b2", tenantId: COLL_TENANT, adminStateUp: false }),
  }));
  if (want("put")) {
    let put!: Result;
    await writeScenario("PUT bridge", "updated", async () => {
      let warm = 0;
      put = await scenario("PUT /bridges/:id", "writes", { url: base, requests: putRequests }, {}, (w) => {
        warm = ok(w);
      });
      return warm + put.ok2xx;
    });
    hold(put, bPg);
  }

  // 90/10: every connection cycles through 9 item GETs and 1 PUT (of the next id).
  if (want("mixed")) {
    const mixedRequests: WrkRequest[] = putRequests.flatMap((p) => [...Array.from({ length: 9 }, () => ({ path })), p]);
    let mixed!: Result;
    await writeScenario("mixed 90/10", "updated", async () => {
      mixed = await scenario("mixed 90% item GET / 10% PUT", "writes", { url: base, requests: mixedRequests });
      return Math.round(mixed.ok2xx / 10); // wrk does not tell the PUTs apart: about one in ten
    });
    hold(mixed, bPg);
  }

  // --- memory at the end
  const afterLoad = MEM_PROBE ? { gateway: await probeMemory(gw.proc), bridge: await probeMemory(bridge) } : undefined;
  if (afterLoad) console.error(`# memory after the load: ${JSON.stringify(afterLoad)}`);
  const rss = { gateway: rssMb(gw.proc), gateway2AfterReplicaRun: rssGateway2, bridge: rssMb(bridge), idle: { ...rssIdle, otherServices: idleOthers }, afterFirstWarmup: rssAfterFirstLoad,
    otherServices: Object.fromEntries([...services].filter(([d]) => d !== "bridge").map(([d, p]) => [d, rssMb(p)])) };
  let streamMessages: number | undefined;
  try {
    const jsm = await nc.jetstreamManager();
    streamMessages = (await jsm.streams.info(streamNames(PREFIX)[0])).state.messages;
  } catch {}

  // --- goals beyond the rows
  const goals = [
    ...results.filter((r) => r.pass !== undefined).map((r) => ({ goal: `${r.scenario} ${r.goal}`, pass: r.pass!, detail: `${fmt(r.rps)} req/s, ratio ${ratioText(r)}` })),
    { goal: `gateway RSS < ${IDLE_GOAL_MB} MB idle`, pass: (rssIdle.gateway ?? Infinity) < IDLE_GOAL_MB, detail: `${fmt(rssIdle.gateway, 1)} MB` },
    { goal: `service RSS < ${IDLE_GOAL_MB} MB idle`, pass: (rssIdle.bridge ?? Infinity) < IDLE_GOAL_MB, detail: `bridge ${fmt(rssIdle.bridge, 1)} MB` },
    { goal: "gateway RSS < 200 MB at the end", pass: (rss.gateway ?? Infinity) < 200, detail: `${fmt(rss.gateway, 1)} MB` },
    { goal: "service RSS < 150 MB at the end", pass: (rss.bridge ?? Infinity) < 150, detail: `${fmt(rss.bridge, 1)} MB` },
    {
      goal: "every write published on NATS",
      pass: publications.every((p) => p.match),
      detail: publications.map((p) => `${p.scenario} ${p.committed} committed / ${p.published} published`).join(", ") || "no writes run",
    },
  ];

  // --- report
  console.log("");
  console.log(table());
  console.log("");
  console.log(`bare express on this machine, this run: ${fmt(bExpress.rps)} req/s; design floor (express+grpc+pg): ${fmt(bPg.rps)} req/s; ${load()} at the end`);
  if (growth.length > 0)
    console.log(
      `growth: ${growth.map((g) => `${fmt(g.rows)} rows`).join(" -> ")}; the fixed tenant always has 10 bridges, the page is the first 100 of all; @100k is held to the @1k repeat after shrinking, each row as its share of its baseline in the same turns.`,
    );
  if (publications.length > 0)
    console.log(
      `NATS: ${publications.map((p) => `${p.scenario}: ${p.acknowledged} acknowledged / ${p.committed} committed / ${p.published} published`).join("; ")}; stream ${streamNames(PREFIX)[0]} holds ${streamMessages ?? "?"} messages`,
    );
  const withCpu = results.filter((r) => r.cpuUs && Object.keys(r.cpuUs).length > 0);
  if (withCpu.length > 0) {
    console.log("CPU per request, microseconds of user + system time each process used while the row ran (from /proc; wrk not counted):");
    if (SYNC) console.log("  (BENCH_SYNC: Postgres, NATS and Redis served both benches at once; their figures hold the other bench's work too, the gateway's and the services' do not)");
    const width = Math.max(...withCpu.map((r) => r.scenario.length));
    for (const r of withCpu) console.log(`  ${r.scenario.padEnd(width)}  ${describeCpu(r.cpuUs!)}`);
  }
  console.log(`the stack ran ${stackDescription}`);
  console.log(
    `RSS idle (settled, before the load): gateway ${fmt(rssIdle.gateway, 1)} MB, bridge service ${fmt(rssIdle.bridge, 1)} MB (other services: ${Object.entries(idleOthers).map(([d, v]) => `${d} ${fmt(v, 1)}`).join(", ")} MB)`,
  );
  console.log(
    `RSS at the end: gateway ${fmt(rss.gateway, 1)} MB, bridge service ${fmt(rss.bridge, 1)} MB (after the first warm-up: ${fmt(rssAfterFirstLoad.gateway, 1)} / ${fmt(rssAfterFirstLoad.bridge, 1)} MB; second gateway after the replica run: ${fmt(rss.gateway2AfterReplicaRun, 1)} MB)`,
  );
  console.log("");
  for (const g of goals) console.log(`${g.pass ? "PASS" : "FAIL"}  ${g.goal}: ${g.detail}`);

  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${STAMP}.json`);
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        startedAt: startedAt.toISOString(),
        elapsedSeconds: Math.round((Date.now() - t0) / 1000),
        config: { tool: "wrk -t1", from: FROM, nodeFlags: [...NODE_FLAGS, ...EXTRA_FLAGS], seconds: SECONDS, warmupSeconds: WARMUP, connections: CONNECTIONS, cpus: cpus().length, node: process.version },
        stack: { schema: SCHEMA, prefix: PREFIX, itemId, collectionTenant: COLL_TENANT, fixedTenant: FIXED_TENANT },
        results,
        only: ONLY,
        growth: growth.map((g) => ({ size: g.size, rows: g.rows, item: g.item.scenario, miss: g.miss.scenario, page: g.page.scenario, fixed: g.fixed.scenario })),
        publications,
        streamMessages,
        rssMb: rss,
        goals,
        cpuProfiles: CPU_PROF ? PROF_DIR : undefined,
        idleMemory: idle,
        memoryAfterLoad: afterLoad,
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
