// The replay step (`--only replay`; issue 57): the change feed replayed to many clients at once
// must not hold the gateway's event loop. BENCH_REPLAY_CHANGES (2,000) bridges are created, then
// BENCH_REPLAY_CLIENTS (40) streams resume from Last-Event-ID 0 over them again and again
// (replay-clients.ts) while a process of its own probes the same gateway's /healthz once a
// millisecond, open loop (probe.ts). The row holds the probe's p99 under 50 ms; the same probe
// without the replays runs first, for comparison.
import { once } from "node:events";
import { type Proc, startProcess } from "@vnm/kit/testing";
import { JSON_TYPE } from "./bridges.ts";
import { load, type Result, type Runner } from "./scenario.ts";
import { REPLAY, SECONDS } from "./settings.ts";
import type { BenchStack } from "./stack.ts";
import { fmt } from "./table.ts";

/** The probe's period. */
const PROBE_EVERY_MS = 1;
/** The probe's first second is not counted (probe.ts). */
const PROBE_WARMUP_S = 1;
/** The goal for the probe's p99 while the replays run. */
const GOAL_MS = 50;

export interface ReplayFigures {
  changes: number;
  clients: number;
  seconds: number;
  /** What the clients read while the probe ran. */
  read: { replays: number; events: number; bytes: number; refused: number };
  idle: Result;
  replaying: Result;
}

interface ProbeOutput {
  sent: number;
  failed: number;
  latencies: number[];
}

/** Runs a script of the bench to its end; gives its last line of output, parsed. */
async function outputOf<T>(proc: Proc): Promise<T> {
  if (proc.child.exitCode === null) await once(proc.child, "exit");
  const lines = proc.output.join("").trim().split("\n");
  try {
    return JSON.parse(lines[lines.length - 1] ?? "") as T;
  } catch {
    throw new Error(`${proc.child.spawnargs.join(" ")} printed no figures:\n${lines.join("\n").slice(-2000)}`);
  }
}

function probeRow(name: string, url: string, p: ProbeOutput, goal?: number): Result {
  const sorted = [...p.latencies].sort((a, b) => a - b);
  const q = (f: number) => sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))] ?? Number.NaN;
  const row: Result = {
    scenario: name,
    group: "replay",
    url,
    rps: Number.NaN,
    p50: q(0.5),
    p99: q(0.99),
    requests: p.sent,
    ok2xx: p.latencies.length,
    non2xx: p.failed,
    errors: 0,
    timeouts: 0,
    load: load(),
    note: `open loop, one per ${PROBE_EVERY_MS} ms; max ${fmt(q(1), 1)} ms`,
  };
  if (goal !== undefined) {
    row.goal = `p99 < ${goal} ms`;
    row.pass = row.p99 < goal && p.failed === 0;
  }
  return row;
}

/** A script of the bench, as startProcess runs one of the repository. */
const script = (name: string) => `bench/src/${name}`;

export async function replayRows(runner: Runner, bench: BenchStack, base: string): Promise<ReplayFigures> {
  // A gateway of its own, whose stream limit per user lets one user's 40 replays in.
  const gw = await bench.startGateway("gateway-replay", { VNM_EVENT_STREAMS_PER_USER: String(REPLAY.clients) });
  let next = 0;
  const write = async () => {
    while (next < REPLAY.changes) {
      next++;
      const r = await bench.api(`${base}/bridges`, { method: "POST", headers: JSON_TYPE, body: JSON.stringify({ name: `replay-${next}`, tenantId: "bench-replay" }) });
      if (r.status !== 201) throw new Error(`POST /bridges: ${r.status} ${await r.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, write));
  const healthz = `${gw.base}/healthz`;
  console.error(`# replay: /healthz probed alone for ${SECONDS} s ${load()}`);
  const idle = probeRow("/healthz, nothing else running (probe)", healthz, await outputOf<ProbeOutput>(startProcess(script("probe.ts"), {}, [], [healthz, String(SECONDS), String(PROBE_EVERY_MS), String(PROBE_WARMUP_S)])));
  runner.results.push(idle);
  console.error(`# replay: ${REPLAY.clients} streams replay ${REPLAY.changes} events from Last-Event-ID 0, again and again, while /healthz is probed for ${SECONDS} s ${load()}`);
  // The clients start a second before the probe and stop a second after it (its warm-up included).
  const clientSeconds = SECONDS + PROBE_WARMUP_S + 2;
  const clients = startProcess(script("replay-clients.ts"), {}, [], [gw.base, bench.token, String(REPLAY.clients), String(REPLAY.changes), String(clientSeconds)]);
  await new Promise((r) => setTimeout(r, 1_000));
  const probe = await outputOf<ProbeOutput>(startProcess(script("probe.ts"), {}, [], [healthz, String(SECONDS), String(PROBE_EVERY_MS), String(PROBE_WARMUP_S)]));
  const read = await outputOf<ReplayFigures["read"]>(clients);
  const replaying = probeRow(`/healthz while ${REPLAY.clients} streams replay ${REPLAY.changes} events from 0 (probe)`, healthz, probe, GOAL_MS);
  replaying.note = `${replaying.note}; the clients read ${fmt(read.bytes / 2 ** 20, 1)} MiB (${fmt(read.bytes / 2 ** 20 / (clientSeconds / 5), 1)} MiB per 5 s), ${fmt(read.replays)} whole replays${read.refused ? `, ${read.refused} refused` : ""}`;
  runner.results.push(replaying);
  await bench.stopProc(gw.proc);
  return { changes: REPLAY.changes, clients: REPLAY.clients, seconds: SECONDS, read, idle, replaying };
}

export function replayLines(f: ReplayFigures): string[] {
  return [
    `replay: /healthz p50 ${fmt(f.idle.p50, 1)} ms, p99 ${fmt(f.idle.p99, 1)} ms alone; p50 ${fmt(f.replaying.p50, 1)} ms, p99 ${fmt(f.replaying.p99, 1)} ms while ${f.clients} streams replayed ${f.changes} events (${fmt(f.read.bytes / 2 ** 20, 1)} MiB read in ${f.seconds + PROBE_WARMUP_S + 2} s); goal p99 < ${GOAL_MS} ms: ${f.replaying.pass ? "PASS" : "FAIL"}`,
  ];
}
