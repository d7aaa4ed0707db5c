// One row of the table: a load driven by wrk against one or more URLs, after an unrecorded
// warm-up, with the CPU each process spent on it; optionally in turns with a baseline.
import { setTimeout as sleep } from "node:timers/promises";
import { mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CpuAccount, sampleCpu } from "./cpu.ts";
import { CONNECTIONS, PAIR_ROUNDS, SECONDS, SYNC, TMP, WARMUP } from "./settings.ts";
import { inSequence, type WrkRequest, type WrkResult, wrk, wrkTogether } from "./wrk.ts";

export interface Result {
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
  paired?: { baseline: string; rps: number; p99: number; rounds: number; secondsEach: number; turns: { rps: number; baselineRps: number; p99: number; baselineP99: number }[] };
  /** CPU microseconds (user + system, from /proc) each process used per request while the row ran, its turns only when paired. */
  cpuUs?: Record<string, number>;
}

/** A load: full URLs (several: one wrk per URL, connections split, figures summed) and the
 * request, or a cycle of requests (paths relative to each URL's origin). */
export interface Load {
  url: string | string[];
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  requests?: WrkRequest[];
  connections?: number;
}

/** A baseline kept running, to be measured in turns with a row held to it. */
export interface Baseline {
  result: Result;
  load: Load;
}

export interface ScenarioOptions {
  /** Measured in turns with this baseline. */
  paired?: Baseline;
  /** A gateway whose cache counters the row's note reports. */
  cacheBase?: string;
  /** Told the warm-up's figures (a write row counts its acknowledged writes). */
  onWarmup?: (r: WrkResult) => void;
}

/** What a runner needs from the bench: wrk, the token, and the processes to watch. */
export interface RunnerContext {
  wrk: string;
  auth: () => Record<string, string>;
  processes: () => Iterable<readonly [string, number | undefined]>;
  rss: () => { gateway?: number; bridge?: number };
  cacheCounters: (base: string) => Promise<{ hits: number; misses: number }>;
}

/** The load averages from /proc/loadavg. */
export const load = (): string => `load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`;
export const ok = (r: WrkResult): number => r.requests - r.non2xx;

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

/**
 * Runs `fn` in this bench's turn: with BENCH_SYNC, the loads of the two benches sharing the
 * folder take turns, one at a time (a folder made and removed is the turn; a bench that wants it
 * leaves a marker, and the one that gave it up asks again only once the other has taken it).
 * Both stacks stay up, so each is measured in the same minutes on the same machine, without the
 * other's load on the cores at once.
 */
async function inMyTurn<T>(fn: () => Promise<T>): Promise<T> {
  const dir = SYNC;
  if (!dir) return fn();
  mkdirSync(dir, { recursive: true });
  const turn = join(dir, "turn");
  const mine = `waiting.${process.pid}`;
  const othersWaiting = () => readdirSync(dir).some((f) => f.startsWith("waiting.") && f !== mine);
  writeFileSync(join(dir, mine), "");
  const until = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(turn);
      break;
    } catch (err) {
      if (!(err instanceof Error && "code" in err && err.code === "EEXIST")) throw err;
      if (Date.now() > until) throw new Error(`BENCH_SYNC: the other bench has held ${turn} for 5 minutes`);
      await sleep(2);
    }
  }
  rmSync(join(dir, mine));
  try {
    return await fn();
  } finally {
    rmdirSync(turn);
    const handOver = Date.now() + 5_000;
    while (othersWaiting() && Date.now() < handOver) await sleep(1);
  }
}

/** "GET /bridges/{id} on http://..." for the progress line. */
function describeLoad(l: Load): string {
  const urls = Array.isArray(l.url) ? l.url : [l.url];
  if (!l.requests) return `${l.method ?? "GET"} ${urls.join(" + ")}`;
  const kinds = l.requests.map((r) => `${r.method ?? "GET"} ${r.path.replace(/[0-9a-f-]{36}/g, "{id}")}`);
  return `${kinds.filter((v, i, a) => a.indexOf(v) === i).join(" | ")} on ${urls.join(" + ")}`;
}

export class Runner {
  readonly results: Result[] = [];
  private scenarioNo = 0;
  private readonly ctx: RunnerContext;

  constructor(ctx: RunnerContext) {
    this.ctx = ctx;
  }

  /** Drives `l` for `seconds`, unrecorded, in this bench's turn. */
  cannon(l: Load, seconds: number): Promise<WrkResult> {
    return inMyTurn(() => this.drive(l, seconds));
  }

  private drive(l: Load, seconds: number): Promise<WrkResult> {
    const urls = Array.isArray(l.url) ? l.url : [l.url];
    const conns = l.connections ?? CONNECTIONS;
    const runs = urls.map((u, i) => {
      const url = new URL(u);
      const requests = l.requests ?? [{ method: l.method, path: `${url.pathname}${url.search}`, headers: l.headers, body: l.body }];
      const share = Math.floor(conns / urls.length) + (i < conns % urls.length ? 1 : 0);
      return { origin: url.origin, requests, headers: this.ctx.auth(), connections: share, seconds };
    });
    return runs.length === 1 ? wrk(this.ctx.wrk, TMP, runs[0]!) : wrkTogether(this.ctx.wrk, TMP, runs);
  }

  /** One row: a progress line, the warm-up, the measured run (in turns when paired), the result kept. */
  async scenario(name: string, group: string, l: Load, opts: ScenarioOptions = {}): Promise<Result> {
    this.scenarioNo++;
    if (SYNC) await together(SYNC, this.scenarioNo);
    console.error(`[${String(this.scenarioNo).padStart(2)}] ${name}: ${describeLoad(l)} (wrk, ${l.connections ?? CONNECTIONS} connections, ${SECONDS} s) ${load()}`);
    if (WARMUP > 0) opts.onWarmup?.(await this.cannon(l, WARMUP));
    const counters = opts.cacheBase ? await this.ctx.cacheCounters(opts.cacheBase) : undefined;
    const cpu = new CpuAccount();
    const { r, paired } = opts.paired ? await this.inTurns(l, opts.paired, cpu) : { r: await this.measured(l, SECONDS, cpu), paired: undefined };
    let note: string | undefined;
    if (opts.cacheBase && counters) {
      const after = await this.ctx.cacheCounters(opts.cacheBase);
      note = `cache hits ${after.hits - counters.hits}, misses ${after.misses - counters.misses}`;
    }
    const urls = Array.isArray(l.url) ? l.url : [l.url];
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
      ...(note ? { note } : {}),
      ...(paired ? { paired } : {}),
      rss: this.ctx.rss(),
      cpuUs: cpu.perRequest(),
    };
    this.results.push(res);
    return res;
  }

  /** A recorded run: its figures, and the CPU each process spent on it added to `cpu`. */
  private async measured(l: Load, seconds: number, cpu: CpuAccount): Promise<WrkResult> {
    return inMyTurn(async () => {
      const before = sampleCpu(this.ctx.processes());
      const m = await this.drive(l, seconds);
      cpu.add(before, sampleCpu(this.ctx.processes()), m.requests);
      return m;
    });
  }

  /** PAIR_ROUNDS turns of the baseline and the row, SECONDS / PAIR_ROUNDS each. */
  private async inTurns(l: Load, base: Baseline, cpu: CpuAccount): Promise<{ r: WrkResult; paired: NonNullable<Result["paired"]> }> {
    const secondsEach = Math.max(1, Math.round(SECONDS / PAIR_ROUNDS));
    if (WARMUP > 0) await this.cannon(base.load, Math.min(WARMUP, 2));
    const mine: WrkResult[] = [];
    const theirs: WrkResult[] = [];
    for (let i = 0; i < PAIR_ROUNDS; i++) {
      // Baseline first in even turns, the row first in odd ones: a steady drift favours neither.
      if (i % 2 === 0) theirs.push(await this.cannon(base.load, secondsEach));
      mine.push(await this.measured(l, secondsEach, cpu));
      if (i % 2 === 1) theirs.push(await this.cannon(base.load, secondsEach));
    }
    const turns = mine.map((m, i) => ({ rps: Math.round(m.rps), baselineRps: Math.round(theirs[i]!.rps), p99: m.p99, baselineP99: theirs[i]!.p99 }));
    const together = inSequence(theirs);
    const paired = { baseline: base.result.scenario, rps: Math.round(together.rps), p99: together.p99, rounds: PAIR_ROUNDS, secondsEach, turns };
    return { r: inSequence(mine), paired };
  }
}
