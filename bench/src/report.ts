// What a run prints under its table and keeps as JSON in bench/results/: the baselines' rates,
// the growth sizes, the NATS check, the CPU per request of each row, memory, and the goals.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { NODE_FLAGS } from "@vnm/kit/repo";
import { type BigList, bigListGoals } from "./big-list.ts";
import { describeCpu } from "./cpu.ts";
import type { Publication } from "./publish.ts";
import { load, type Result } from "./scenario.ts";
import { CONNECTIONS, CPU_PROF, EXTRA_FLAGS, FROM, IDLE_GOAL_MB, ONLY, PROF_DIR, RESULTS_DIR, SECONDS, STAMP, SYNC, WARMUP } from "./settings.ts";
import { allocator, stackDescription } from "./stack.ts";
import type { Step } from "./steps.ts";
import { type RulesFigures, rulesLines } from "./rules.ts";
import { type FairnessFigures, fairnessLines } from "./fairness.ts";
import { type ReplayFigures, replayLines } from "./replay.ts";
import { type TopologyFigures, topologyLines } from "./topology.ts";
import { fmt, ratioText, table } from "./table.ts";

type Rss = { gateway?: number; bridge?: number };

export interface Run {
  startedAt: Date;
  results: Result[];
  express: Result;
  floor: Result;
  /** The durable-write floor, when POST or the baselines ran. */
  writeFloor?: Result;
  growth: Step[];
  /** The unpaged list over a big table, when it ran. */
  bigList?: BigList;
  /** The topology step's sizes and the console's drawing times, when it ran (its reads are rows). */
  topology?: TopologyFigures;
  /** The rules step's chain, when it ran (its reads and inserts are rows). */
  rules?: RulesFigures;
  /** The fairness step's two tenants, when it ran (its loads are rows). */
  fairness?: FairnessFigures;
  /** The replay step's probe, when it ran (its probes are rows). */
  replay?: ReplayFigures;
  publications: Publication[];
  stream: string;
  streamMessages?: number;
  stack: Record<string, string>;
  rss: Rss & { gateway2AfterReplicaRun?: number; idle: Rss & { otherServices: Record<string, number | undefined> }; afterFirstWarmup: Rss; otherServices: Record<string, number | undefined> };
  idleMemory?: unknown;
  memoryAfterLoad?: unknown;
}

export interface Goal {
  goal: string;
  pass: boolean;
  detail: string;
}

/** Every row's goal, then memory and the NATS check. */
export function goals(run: Run): Goal[] {
  const { rss, publications } = run;
  return [
    ...run.results.filter((r) => r.pass !== undefined).map((r) => ({ goal: `${r.scenario} ${r.goal}`, pass: r.pass!, detail: `${Number.isNaN(r.rps) ? `p99 ${fmt(r.p99, 1)} ms` : `${fmt(r.rps)} req/s`}, ratio ${ratioText(r)}` })),
    { goal: `gateway RSS < ${IDLE_GOAL_MB} MB idle`, pass: (rss.idle.gateway ?? Infinity) < IDLE_GOAL_MB, detail: `${fmt(rss.idle.gateway, 1)} MB` },
    { goal: `service RSS < ${IDLE_GOAL_MB} MB idle`, pass: (rss.idle.bridge ?? Infinity) < IDLE_GOAL_MB, detail: `bridge ${fmt(rss.idle.bridge, 1)} MB` },
    { goal: "gateway RSS < 200 MB at the end", pass: (rss.gateway ?? Infinity) < 200, detail: `${fmt(rss.gateway, 1)} MB` },
    { goal: "service RSS < 150 MB at the end", pass: (rss.bridge ?? Infinity) < 150, detail: `${fmt(rss.bridge, 1)} MB` },
    {
      goal: "every write published on NATS",
      pass: publications.every((p) => p.match),
      detail: publications.map((p) => `${p.scenario} ${p.committed} committed / ${p.published} published`).join(", ") || "no writes run",
    },
    ...(run.bigList ? bigListGoals(run.bigList) : []),
  ];
}

/** The CPU a request of each row cost in each process. */
function cpuLines(results: Result[]): string[] {
  const withCpu = results.filter((r) => r.cpuUs && Object.keys(r.cpuUs).length > 0);
  if (withCpu.length === 0) return [];
  const width = Math.max(...withCpu.map((r) => r.scenario.length));
  return [
    "CPU per request, microseconds of user + system time each process used while the row ran (from /proc; wrk not counted):",
    ...(SYNC ? ["  (BENCH_SYNC: Postgres, NATS and Redis served both benches at once; their figures hold the other bench's work too, the gateway's and the services' do not)"] : []),
    ...withCpu.map((r) => `  ${r.scenario.padEnd(width)}  ${describeCpu(r.cpuUs!)}`),
  ];
}

/** The table and everything printed under it. */
export function print(run: Run, all: Goal[]): void {
  const { rss, growth, publications } = run;
  const lines = ["", table(run.results), ""];
  const writeFloor = run.writeFloor ? `; durable-write floor (express+grpc+pg insert and outbox row, synchronous commit): ${fmt(run.writeFloor.rps)} req/s` : "";
  lines.push(`bare express on this machine, this run: ${fmt(run.express.rps)} req/s; design floor (express+grpc+pg): ${fmt(run.floor.rps)} req/s${writeFloor}; ${load()} at the end`);
  if (growth.length > 0)
    lines.push(
      `growth: ${growth.map((g) => `${fmt(g.rows)} rows`).join(" -> ")}; the fixed tenant always has 10 bridges, the page is the first 100 of all; @${(growth[1]?.size ?? 0) / 1000}k is held to the @1k repeat after shrinking, each row as its share of its baseline in the same turns.`,
    );
  if (publications.length > 0)
    lines.push(
      `NATS: ${publications.map((p) => `${p.scenario}: ${p.acknowledged} acknowledged / ${p.committed} committed / ${p.published} published`).join("; ")}; stream ${run.stream} holds ${run.streamMessages ?? "?"} messages`,
    );
  if (run.topology) lines.push(...topologyLines(run.topology));
  if (run.rules) lines.push(...rulesLines(run.rules));
  if (run.fairness) lines.push(...fairnessLines(run.fairness));
  if (run.replay) lines.push(...replayLines(run.replay));
  lines.push(...cpuLines(run.results), `the stack ran ${stackDescription}`);
  const others = Object.entries(rss.idle.otherServices).map(([d, v]) => `${d} ${fmt(v, 1)}`);
  lines.push(`RSS idle (settled, before the load): gateway ${fmt(rss.idle.gateway, 1)} MB, bridge service ${fmt(rss.idle.bridge, 1)} MB (other services: ${others.join(", ")} MB)`);
  lines.push(
    `RSS at the end: gateway ${fmt(rss.gateway, 1)} MB, bridge service ${fmt(rss.bridge, 1)} MB (after the first warm-up: ${fmt(rss.afterFirstWarmup.gateway, 1)} / ${fmt(rss.afterFirstWarmup.bridge, 1)} MB; second gateway after the replica run: ${fmt(rss.gateway2AfterReplicaRun, 1)} MB)`,
  );
  lines.push("", ...all.map((g) => `${g.pass ? "PASS" : "FAIL"}  ${g.goal}: ${g.detail}`));
  console.log(lines.join("\n"));
}

/** Keeps the run as bench/results/<timestamp>.json; gives the file. */
export function save(run: Run, all: Goal[]): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${STAMP}.json`);
  const json = {
    startedAt: run.startedAt.toISOString(),
    elapsedSeconds: Math.round((Date.now() - run.startedAt.getTime()) / 1000),
    config: { tool: "wrk -t1", from: FROM, nodeFlags: [...NODE_FLAGS, ...EXTRA_FLAGS], allocator: allocator(), seconds: SECONDS, warmupSeconds: WARMUP, connections: CONNECTIONS, cpus: cpus().length, node: process.version },
    stack: run.stack,
    results: run.results,
    only: ONLY,
    growth: run.growth.map((g) => ({ size: g.size, rows: g.rows, item: g.item.scenario, miss: g.miss.scenario, page: g.page.scenario, fixed: g.fixed.scenario })),
    publications: run.publications,
    streamMessages: run.streamMessages,
    rssMb: run.rss,
    goals: all,
    cpuProfiles: CPU_PROF ? PROF_DIR : undefined,
    idleMemory: run.idleMemory,
    memoryAfterLoad: run.memoryAfterLoad,
    topology: run.topology,
    rules: run.rules,
    fairness: run.fairness,
    replay: run.replay,
  };
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  return file;
}
