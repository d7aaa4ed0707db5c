// npm run bench: the stack against baseline servers on this machine, every figure from wrk
// (Debian's, installed when missing) so the load generator takes no CPU from Node: the paths,
// their ratios to the baselines of the same run and their goals, one table and one JSON per run.
import { setTimeout as sleep } from "node:timers/promises";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cpus } from "node:os";
import { reclaimPeriodSeconds } from "@vnm/kit";
import { DEPS, type Proc, serviceDomains } from "@vnm/kit/testing";
import { connect, type NatsConnection } from "nats";
import { BaselineRunner, type Baselines } from "./baselines.ts";
import { Bridges, COLL_TENANT, FIXED_TENANT } from "./bridges.ts";
import { probeMemory, rssMb, settledRss } from "./memory.ts";
import { Publications } from "./publish.ts";
import { goals, print, type Run, save } from "./report.ts";
import { load, Runner } from "./scenario.ts";
import { type BigList, bigListRow } from "./big-list.ts";
import { BIG_LIST, CONNECTIONS, CPU_PROF, FAIR_FLOOD, GROWTH_SIZES, REPLAY, MEM_PROBE, ONLY, PROF_DIR, RESULTS_DIR, RULES, SECONDS, STAMP, TMP, TOPO, WARMUP, want } from "./settings.ts";
import { BenchStack, stackDescription } from "./stack.ts";
import { collectionRows, type Ctx, growthRows, itemRows, replicaRows, type Step, writeRows } from "./steps.ts";
import { fmt, hold, table } from "./table.ts";
import { type RulesFigures, rulesLines, rulesRows } from "./rules.ts";
import { type TopologyFigures, topologyLines, topologyRows } from "./topology.ts";
import { ensureWrk } from "./wrk.ts";
import { type FairnessFigures, fairnessLines, fairnessRows } from "./fairness.ts";
import { type ReplayFigures, replayLines, replayRows } from "./replay.ts";

const bench = new BenchStack();
let nc: NatsConnection | undefined;

/** The gateway's cache counters (GET /metrics). */
async function cacheCounters(base: string): Promise<{ hits: number; misses: number }> {
  const t = await (await bench.api(`${base}/metrics`)).text();
  const num = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, "m").exec(t)?.[1] ?? Number.NaN);
  return { hits: num("vnm_cache_hits_total"), misses: num("vnm_cache_misses_total") };
}

/** The running stack before any row: what every step needs, the two processes watched closely, the item's bytes. */
interface SetUp {
  ctx: Omit<Ctx, "baselines" | "stackWarmup">;
  gateway: Proc;
  bridge: Proc;
  body: string;
  type: string;
}

/** The stack up, the bridges made, the item every row reads fetched once. */
async function setUp(): Promise<SetUp> {
  console.error(
    `# vnm bench (wrk): ${ONLY ? `only ${ONLY.join(", ")}; ` : ""}${SECONDS} s per scenario (+${WARMUP} s warm-up), ${CONNECTIONS} connections, ${cpus().length} CPUs, node ${process.version}, services ${serviceDomains().join(", ")}, prefix ${bench.stack.prefix}, ${load()}`,
  );
  console.error(`# the stack runs ${stackDescription}`);
  bench.prepare();
  if (CPU_PROF) mkdirSync(PROF_DIR, { recursive: true });
  const wrk = ensureWrk();
  nc = await connect({ servers: DEPS.natsUrl, name: "vnm-bench" });
  const { base, gateway, bridge } = await bench.start();
  const rss = () => ({ gateway: rssMb(gateway), bridge: rssMb(bridge) });
  const runner = new Runner({ wrk, auth: () => bench.auth(), processes: () => bench.processes(), rss, cacheCounters });
  const bridges = new Bridges((u, i) => bench.api(u, i), base, bench.stack.schema("bridge"));
  await bridges.seed(GROWTH_SIZES[0]);
  await bridges.settle();
  const path = `/bridges/${bridges.fixed[0]}`;
  const first = await bench.api(`${base}${path}`);
  if (first.status !== 200) throw new Error(`GET ${base}${path}: ${first.status}`);
  const body = await first.text();
  const type = first.headers.get("content-type")!;
  console.error(`# item GET body: ${body.length} B of ${type}`);
  const publications = new Publications(nc, bench.stack.prefix, () => bench.bridgeMetrics());
  const collUrl = `${base}/bridges?tenant_id=${COLL_TENANT}`;
  return { ctx: { bench, runner, bridges, publications, base, path, itemUrl: `${base}${path}`, collUrl }, gateway, bridge, body, type };
}

/**
 * The baselines, after a quiet wait: each process of the stack gives back its start-up memory
 * after a whole quiet period (VNM_RECLAIM_IDLE_SECONDS), a full GC that would otherwise take CPU
 * from a baseline's run.
 */
async function measureBaselines(s: SetUp): Promise<Baselines> {
  const reclaimSeconds = reclaimPeriodSeconds();
  if (reclaimSeconds > 0) {
    const wait = 2 * reclaimSeconds + 2;
    console.error(`# letting the stack go quiet for ${wait} s (it gives back its start-up memory) ${load()}`);
    await sleep(wait * 1000);
  }
  const item = { path: s.ctx.path, id: s.ctx.bridges.fixed[0]!, body: s.body, contentType: s.type, schema: bench.stack.schema("bridge") };
  const runner = new BaselineRunner(bench, s.ctx.runner, item);
  const collectionBody = async () => {
    await s.ctx.bridges.checkList(s.ctx.collUrl, s.ctx.bridges.collection.length);
    return (await bench.api(s.ctx.collUrl)).text();
  };
  const b = await runner.all(collectionBody, want("collection"));
  for (const r of s.ctx.runner.results) if (r !== b.express.result) hold(r, b.express.result);
  return b;
}

/** Idle memory: the stack has been up through the quiet wait and the baselines with a few requests. */
async function measureIdle(s: SetUp): Promise<Pick<Run["rss"], "idle"> & { memory?: unknown }> {
  const settled = await settledRss(() => ({ gateway: rssMb(s.gateway), bridge: rssMb(s.bridge) }));
  const otherServices = Object.fromEntries(bench.otherServices().map((m) => [m.label, rssMb(m.proc)]));
  console.error(`# idle RSS: gateway ${fmt(settled.gateway, 1)} MB, bridge service ${fmt(settled.bridge, 1)} MB ${load()}`);
  const memory = MEM_PROBE ? { gateway: await probeMemory(s.gateway), bridge: await probeMemory(s.bridge) } : undefined;
  if (memory) console.error(`# idle memory: ${JSON.stringify(memory)}`);
  return { idle: { ...settled, otherServices }, memory };
}

/** Every measured path; gives the rows' growth steps and the second gateway's RSS. */
async function runPaths(ctx: Ctx, procs: { gateway: Proc; bridge: Proc }): Promise<{ growth: Step[]; gateway2?: number; bigList?: BigList; topology?: TopologyFigures; rules?: RulesFigures; fairness?: FairnessFigures; replay?: ReplayFigures }> {
  const hit = await itemRows(ctx);
  if (want("collection")) await collectionRows(ctx);
  const gateway2 = want("replicas") ? await replicaRows(ctx, hit) : undefined;
  const growth = want("growth") ? await growthRows(ctx) : [];
  await writeRows(ctx);
  const topology = want("topology") ? await topologyRows(ctx.runner, (u, i) => bench.api(u, i), ctx.base, bench.stack.id) : undefined;
  const rules = want("rules") ? await rulesRows(ctx.runner, (u, i) => bench.api(u, i), ctx.base, bench.stack.id) : undefined;
  const fairness = want("fairness") ? await fairnessRows(ctx.runner, bench, ensureWrk(), ctx.base) : undefined;
  const replay = want("replay") ? await replayRows(ctx.runner, bench, ctx.base) : undefined;
  // Last: it grows the table to BENCH_BIG_LIST bridges.
  const bigList = want("biglist") ? await bigListRow(ctx.bridges, BIG_LIST, ctx.base, (u) => bench.api(u), procs) : undefined;
  return { growth, gateway2, bigList, topology, rules, fairness, replay };
}

/** A step that runs by itself (`--only topology`, `--only rules`): its rows are held to no baseline. */
interface Standalone {
  sizes: unknown;
  run(runner: Runner, base: string): Promise<{ figures: unknown; lines: string[] }>;
}

const STANDALONE: Partial<Record<string, Standalone>> = {
  topology: {
    sizes: TOPO,
    async run(runner, base) {
      const figures = await topologyRows(runner, (u, i) => bench.api(u, i), base, bench.stack.id);
      return { figures, lines: topologyLines(figures) };
    },
  },
  rules: {
    sizes: { rules: RULES },
    async run(runner, base) {
      const figures = await rulesRows(runner, (u, i) => bench.api(u, i), base, bench.stack.id);
      return { figures, lines: rulesLines(figures) };
    },
  },
  replay: {
    sizes: REPLAY,
    async run(runner, base) {
      const figures = await replayRows(runner, bench, base);
      return { figures, lines: replayLines(figures) };
    },
  },
  fairness: {
    sizes: { flood: FAIR_FLOOD },
    async run(runner, base) {
      const figures = await fairnessRows(runner, bench, ensureWrk(), base);
      return { figures, lines: fairnessLines(figures) };
    },
  },
};

/**
 * `--only <step>` of a standalone step by itself: the stack, the step and its rows, without the
 * bridges, baselines and quiet wait the other paths need.
 */
async function standalone(name: string, step: Standalone): Promise<void> {
  const startedAt = new Date();
  console.error(`# vnm bench (wrk): only ${name}; ${SECONDS} s per scenario (+${WARMUP} s warm-up), ${CONNECTIONS} connections, sizes ${JSON.stringify(step.sizes)}, ${load()}`);
  bench.prepare();
  const wrk = ensureWrk();
  const { base, gateway, bridge } = await bench.start();
  const rss = () => ({ gateway: rssMb(gateway), bridge: rssMb(bridge) });
  const runner = new Runner({ wrk, auth: () => bench.auth(), processes: () => bench.processes(), rss, cacheCounters });
  const { figures, lines } = await step.run(runner, base);
  console.log(["", table(runner.results), "", ...lines].join("\n"));
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${STAMP}-${name}.json`);
  writeFileSync(file, `${JSON.stringify({ startedAt: startedAt.toISOString(), only: ONLY, seconds: SECONDS, warmupSeconds: WARMUP, connections: CONNECTIONS, sizes: step.sizes, results: runner.results, [name]: figures }, null, 2)}\n`);
  console.log(`\n# results: ${file} (${Math.round((Date.now() - startedAt.getTime()) / 1000)} s)`);
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const s = await setUp();
  const baselines = await measureBaselines(s);
  const idle = await measureIdle(s);
  // A fresh stack runs below its steady pace until the JIT has seen several seconds of the same traffic.
  const stackWarmup = Math.max(6, 2 * WARMUP);
  console.error(`# warming up the stack (${stackWarmup} s of item GETs and collection GETs, not recorded) ${load()}`);
  await s.ctx.runner.cannon({ url: s.ctx.itemUrl }, stackWarmup);
  await s.ctx.runner.cannon({ url: s.ctx.collUrl }, stackWarmup / 2);
  const afterFirstWarmup = { gateway: rssMb(s.gateway), bridge: rssMb(s.bridge) };
  const ctx: Ctx = { ...s.ctx, baselines, stackWarmup };
  const { growth, gateway2, bigList, topology, rules, fairness, replay } = await runPaths(ctx, s);
  const memoryAfterLoad = MEM_PROBE ? { gateway: await probeMemory(s.gateway), bridge: await probeMemory(s.bridge) } : undefined;
  if (memoryAfterLoad) console.error(`# memory after the load: ${JSON.stringify(memoryAfterLoad)}`);
  const otherServices = Object.fromEntries(bench.otherServices().map((m) => [m.label, rssMb(m.proc)]));
  const rss = { gateway: rssMb(s.gateway), gateway2AfterReplicaRun: gateway2, bridge: rssMb(s.bridge), idle: idle.idle, afterFirstWarmup, otherServices };
  const run: Run = {
    startedAt,
    results: s.ctx.runner.results,
    express: baselines.express.result,
    floor: baselines.floor.result,
    ...(baselines.writeFloor ? { writeFloor: baselines.writeFloor.result } : {}),
    growth,
    bigList,
    topology,
    rules,
    fairness,
    replay,
    publications: s.ctx.publications.list,
    stream: s.ctx.publications.stream,
    streamMessages: await s.ctx.publications.stored().catch(() => undefined),
    stack: { schema: bench.stack.schema("bridge"), prefix: bench.stack.prefix, itemId: s.ctx.bridges.fixed[0]!, collectionTenant: COLL_TENANT, fixedTenant: FIXED_TENANT },
    rss,
    idleMemory: idle.memory,
    memoryAfterLoad,
  };
  const all = goals(run);
  print(run, all);
  console.log(`\n# results: ${save(run, all)} (${Math.round((Date.now() - startedAt.getTime()) / 1000)} s)`);
}

let cleaned = false;
/** Stops every process and removes what the run left in Postgres, NATS and Redis, once. */
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await bench.stop().catch((err: Error) => console.error(`# cleanup: ${err.message}`));
  await nc?.close().catch(() => {});
  rmSync(TMP, { recursive: true, force: true });
}

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    console.error(`# ${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  const alone = ONLY?.length === 1 ? STANDALONE[ONLY[0]!] : undefined;
  await (alone ? standalone(ONLY![0]!, alone) : main());
} catch (err) {
  console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
