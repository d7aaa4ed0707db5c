// The bench's settings: BENCH_* variables (read by name: they are no turbo task inputs) and the
// paths `--only` picks.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "@vnm/kit/testing";

const setting = (name: string): string | undefined => process.env[`BENCH_${name}`] || undefined;

/** A whole number setting, `fallback` when unset. */
function count(name: string, fallback: number, min: number): number {
  const n = Number(setting(name) ?? fallback);
  if (!Number.isInteger(n) || n < min) throw new Error(`BENCH_${name}=${setting(name)}: a whole number, ${min} or more`);
  return n;
}

/** Bridges in the table for the unpaged list's row (the last one: it grows the table). */
export const BIG_LIST = count("BIG_LIST", 100_000, 1);
/** Recorded seconds per scenario. */
export const SECONDS = count("SECONDS", 10, 1);
export const CONNECTIONS = count("CONNECTIONS", 32, 1);
/**
 * Unrecorded seconds before each scenario: a path the JIT has not seen runs at about half its
 * steady pace for its first seconds.
 */
export const WARMUP = count("WARMUP", 5, 0);
/**
 * A row held to a baseline's rate runs in PAIR_ROUNDS turns with that baseline, in alternating
 * order, and its ratio compares their sums: a ratio to a baseline measured minutes earlier
 * carries the machine's drift in speed.
 */
export const PAIR_ROUNDS = count("PAIR_ROUNDS", 5, 1);
/** Profiles the gateways and the bridge service (node --cpu-prof) into the run's folder. */
export const CPU_PROF = setting("CPU_PROF") === "1";
/** Preloads memory-probe.ts into the gateways and the bridge service and reports what their memory is made of. */
export const MEM_PROBE = setting("MEM_PROBE") === "1";
/**
 * What the stack runs from: "sources" (the default), the .ts files as `npm start` runs them and an
 * outside harness measures them; "compiled", the JavaScript deploy/build.ts makes for the image.
 */
export const FROM = setting("FROM") ?? "sources";
if (FROM !== "compiled" && FROM !== "sources") throw new Error(`BENCH_FROM=${FROM}: compiled or sources`);
/**
 * A folder two benches share (same --only on both) to compare two builds: each scenario starts
 * together in both, and their loads take turns (scenario.ts, inMyTurn), so both stacks are up on
 * the same machine in the same minutes and each is measured without the other's load beside it.
 */
export const SYNC = setting("SYNC");
/** The stack's log level: npm start's default, info (a line per request), unless BENCH_LOG_LEVEL names another, to see what the log costs. */
export const LOG_LEVEL = setting("LOG_LEVEL") ?? "info";
/** Node flags for the gateway and the services on top of the project's (space-separated). */
export const EXTRA_FLAGS = (setting("NODE_FLAGS") ?? "").split(" ").filter(Boolean);
/** The sizes of the bridges table the growth rows run at: 1,000, then BENCH_GROWTH_TO (100,000), then 1,000 again. */
export const GROWTH_SIZES = [1_000, count("GROWTH_TO", 100_000, 1_001)] as const;
/**
 * The topology step's sizes: routers, ports (spread over the routers), links (each within a
 * tenant), routers per tenant (the tenant the console draws is the first), and the drawings timed.
 */
export const TOPO = {
  routers: count("TOPO_ROUTERS", 1_000, 2),
  ports: count("TOPO_PORTS", 10_000, 2),
  links: count("TOPO_LINKS", 5_000, 0),
  tenantRouters: count("TOPO_TENANT_ROUTERS", 50, 2),
  draws: count("TOPO_DRAWS", 5, 1),
};
/** The fairness step's flood: tenant A's connections (tenant B has 2). */
export const FAIR_FLOOD = count("FAIR_FLOOD", 160, 2);
/** The rules step's chain: rules made in it before its rows run. */
export const RULES = count("RULES", 10_000, 1);
/** The replay step: bridges created, then replayed from Last-Event-ID 0 by this many streams at once. */
export const REPLAY = { changes: count("REPLAY_CHANGES", 2_000, 1), clients: count("REPLAY_CLIENTS", 40, 1) };
/** The goal for a gateway's or a service's RSS when idle. */
export const IDLE_GOAL_MB = 100;

export const RESULTS_DIR = join(ROOT, "bench/results");
export const STAMP = new Date().toISOString().replace(/[:.]/g, "-");
/** The run's CPU profiles (BENCH_CPU_PROF=1). */
export const PROF_DIR = join(RESULTS_DIR, `prof-${STAMP}`);
/** Scratch files of this run (the compiled stack, wrk scripts, baseline configs), removed at the end. */
export const TMP = mkdtempSync(join(tmpdir(), "vnm-bench-"));

/** The paths `--only` selects (comma-separated or repeated); the express and design-floor baselines always run, the durable-write floor with `post`. */
export const PATHS = ["baselines", "item", "collection", "replicas", "growth", "post", "put", "patch", "mixed", "biglist", "topology", "rules", "fairness", "replay"] as const;
export type Path = (typeof PATHS)[number];

function onlyArg(argv: string[]): Path[] | undefined {
  const picked: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--only") picked.push(...(argv[++i] ?? "").split(","));
    else if (a.startsWith("--only=")) picked.push(...a.slice(7).split(","));
    else throw new Error(`unknown argument ${a}; usage: npm run bench [-- --only ${PATHS.join("|")}[,...]]`);
  }
  const paths = picked.map((p) => {
    const path = PATHS.find((x) => x === p);
    if (!path) throw new Error(`--only ${p}: one of ${PATHS.join(", ")}`);
    return path;
  });
  return paths.length > 0 ? paths : undefined;
}

export const ONLY = onlyArg(process.argv.slice(2));
export const want = (path: Path): boolean => !ONLY || ONLY.includes(path);
