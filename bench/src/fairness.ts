// The fairness step (`--only fairness`; issue 54, docs/operations.md "Fair shares of the
// services"), as gateway/test/fair-share.e2e.spec.ts: tenant A floods POST /bridges with
// BENCH_FAIR_FLOOD connections (160, over three of its users, within VNM_REQUESTS_PER_USER each)
// past its share of a gateway with the default 8 seats and a queue of 128 (64 by default: the
// deeper A's backlog, the more its calls wait against B's whatever else the machine runs), the
// excess refused with 429 and each 429 followed by a pause of 100 ms (a client asking again at
// once is a rate, which VNM_RATE_LIMIT bounds); tenant B creates bridges with 2 connections in
// the same seconds, each load a wrk of its own. The same at a gateway without seats
// (VNM_SEATS_PER_SERVICE=0: one shared queue, as before) runs before and after it. Both p99s side by side; the goal is
// B's p99 at most half of A's with seats.
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { JSON_TYPE } from "./bridges.ts";
import { load, type Result, type Runner } from "./scenario.ts";
import { FAIR_FLOOD, SECONDS, TMP, WARMUP } from "./settings.ts";
import type { BenchStack } from "./stack.ts";
import { fmt } from "./table.ts";
import { type WrkRequest, type WrkResult, wrk } from "./wrk.ts";

/** B's connections: a light tenant, well within its share. */
const LIGHT = 2;
/** A's flood starts this long before B's load and ends this long after it. */
const LEAD_S = 2;
/** A tenant's queue at the gateway with seats. */
const SEAT_QUEUE = 128;
/** The pause that follows each of A's 429s. */
const REFUSED_PAUSE_MS = 100;

/** The flood: wrk cycling through `requests`, a request after each 429 sent REFUSED_PAUSE_MS late. */
function flood(bin: string, origin: string, requests: WrkRequest[], connections: number, seconds: number): Promise<WrkResult> {
  return wrk(bin, TMP, { origin, requests, connections, seconds, pauseAfter429Ms: REFUSED_PAUSE_MS });
}

export interface FairnessFigures {
  flood: number;
  queue: number;
  light: number;
  seats: { a: Result; b: Result };
  noSeats: { a: Result; b: Result };
  noSeatsAfter: { a: Result; b: Result };
}

async function post(bench: BenchStack, url: string, body: unknown): Promise<void> {
  const r = await bench.api(url, { method: "POST", headers: JSON_TYPE, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`POST ${url}: ${r.status} ${await r.text()}`);
}

function row(name: string, url: string, r: WrkResult): Result {
  return { scenario: name, group: "fairness", url, rps: Math.round(r.rps), p50: r.p50, p99: r.p99, requests: r.requests, ok2xx: r.requests - r.non2xx, non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts, load: load() };
}

/** A's flood and B's light load at `base` in the same seconds; both rows added to the runner's table. */
async function together(runner: Runner, wrkBin: string, base: string, label: string, tokens: { a: string[]; b: string }, tag: string): Promise<{ a: Result; b: Result }> {
  const origin = new URL(base).origin;
  const body = (tenant: string) => JSON.stringify({ name: `fair-${tag}`, tenantId: tenant });
  const aRequests = tokens.a.map((t) => ({ method: "POST", path: "/bridges", headers: { ...JSON_TYPE, "x-auth-token": t }, body: body(`bench-fair-a-${tag}`) }));
  const bRequests = [{ method: "POST", path: "/bridges", headers: { ...JSON_TYPE, "x-auth-token": tokens.b }, body: body(`bench-fair-b-${tag}`) }];
  // Unrecorded first, as every row: a gateway and a service run below their pace until the JIT has seen the path.
  if (WARMUP > 0) await flood(wrkBin, origin, aRequests, FAIR_FLOOD, WARMUP);
  console.error(`# fairness (${label}): tenant A floods POST /bridges with ${FAIR_FLOOD} connections for ${SECONDS + 2 * LEAD_S} s, tenant B posts with ${LIGHT} in its middle ${SECONDS} s ${load()}`);
  const aRun = flood(wrkBin, origin, aRequests, FAIR_FLOOD, SECONDS + 2 * LEAD_S);
  await sleep(LEAD_S * 1000);
  const b = await wrk(wrkBin, TMP, { origin, requests: bRequests, connections: LIGHT, seconds: SECONDS });
  const a = await aRun;
  const rows = {
    a: row(`fairness (${label}): tenant A's flood, POST /bridges, ${FAIR_FLOOD} connections`, base, a),
    b: row(`fairness (${label}): tenant B, POST /bridges, ${LIGHT} connections, same seconds`, base, b),
  };
  runner.results.push(rows.a, rows.b);
  return rows;
}

/** The step: two tenants' users, then the loads at the gateway with seats and at one without. */
export async function fairnessRows(runner: Runner, bench: BenchStack, wrkBin: string, base: string): Promise<FairnessFigures> {
  const tag = bench.stack.id;
  const password = randomBytes(12).toString("hex");
  const users = { a: [`fair-a1-${tag}`, `fair-a2-${tag}`, `fair-a3-${tag}`], b: `fair-b-${tag}` };
  for (const name of users.a) await post(bench, `${base}/users`, { name, password, tenantId: `bench-fair-a-${tag}`, roles: ["tenant_admin"] });
  await post(bench, `${base}/users`, { name: users.b, password, tenantId: `bench-fair-b-${tag}`, roles: ["tenant_admin"] });
  const tokensAt = async (at: string) => ({ a: await Promise.all(users.a.map((u) => bench.stack.login(at, u, password))), b: await bench.stack.login(at, users.b, password) });
  // The gateway with seats between two runs without (a fresh stack speeds up from run to run:
  // whichever runs first is the slowest), each gateway a new one.
  const at = async (label: string, env: NodeJS.ProcessEnv) => {
    const gw = await bench.startGateway(`gateway-${label.replace(/ /g, "-")}`, env);
    const rows = await together(runner, wrkBin, gw.base, label, await tokensAt(gw.base), tag);
    await bench.stopProc(gw.proc);
    return rows;
  };
  const noSeats = await at("no seats", { VNM_SEATS_PER_SERVICE: "0" });
  const seats = await at("seats", { VNM_SEAT_QUEUE: String(SEAT_QUEUE) });
  const noSeatsAfter = await at("no seats, again", { VNM_SEATS_PER_SERVICE: "0" });
  const pass = seats.b.p99 <= seats.a.p99 / 2;
  seats.b.goal = "p99 <= 0.5 x tenant A's p99 in the same seconds";
  seats.b.pass = pass;
  return { flood: FAIR_FLOOD, queue: SEAT_QUEUE, light: LIGHT, seats, noSeats, noSeatsAfter };
}

/** The lines a run prints under its table about the step. */
export function fairnessLines(f: FairnessFigures): string[] {
  const line = (label: string, x: { a: Result; b: Result }) =>
    `fairness (${label}): tenant B's p99 ${fmt(x.b.p99, 1)} ms against tenant A's ${fmt(x.a.p99, 1)} ms (${fmt(x.b.p99 / x.a.p99, 2)}); p50 ${fmt(x.b.p50, 1)} against ${fmt(x.a.p50, 1)} ms; A ${fmt(x.a.ok2xx)} created and ${fmt(x.a.non2xx)} other answers (429 with seats), B ${fmt(x.b.ok2xx)} created and ${fmt(x.b.non2xx)} other answers`;
  return [
    `fairness: tenant A floods POST /bridges with ${f.flood} connections (three users; a 429 is followed by a pause of ${REFUSED_PAUSE_MS} ms), tenant B posts with ${f.light} in the same seconds; wrk's p99 of every answer (A's 429s too)`,
    line(`8 seats, a queue of ${f.queue}`, f.seats),
    line("no seats, VNM_SEATS_PER_SERVICE=0, before", f.noSeats),
    line("no seats, after", f.noSeatsAfter),
  ];
}
