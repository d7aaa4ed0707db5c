// Fair shares of a service (issue 54; gateway/src/fair.ts, docs/operations.md "Fair shares of
// the services"):
// tenant A floods bridge creates with far more requests at once than its share, tenant B creates
// bridges lightly in the same seconds. Through a gateway with seats, B's p99 is at most half of
// A's, A's excess is refused with 429 and Retry-After (no 5xx, no timeout) and B is never
// refused; few callers wait in the bridge service's Postgres pool (the backlog waits at the
// gateway). The same load through a gateway without seats (VNM_SEATS_PER_SERVICE=0, one shared
// queue as before) gives B about A's p99 and most of the flood waiting in the pool: the
// comparison this test exists for. A's flood runs in a worker thread, B's load in the test's.
import { randomBytes } from "node:crypto";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, type HttpResult, httpClient, Stack } from "@vnm/e2e/harness";

const stack = new Stack();
const http = httpClient(() => "", "application/json");
const PASSWORD = randomBytes(16).toString("hex");
/** A's requests at once (three users, within VNM_REQUESTS_PER_USER each): past the 8 seats and the queue of 128. */
const FLOOD = 160;
/** B's requests at once. */
const LIGHT = 2;
/** The flood's length, and the part of it in which B's requests count. */
const FLOOD_MS = 12_000;
const LEAD_MS = 1_500;
/** After a 429, a flood worker asks again this much later (a client sending without pause is a rate, which VNM_RATE_LIMIT bounds). */
const REFUSED_PAUSE_MS = 100;
const common = { VNM_RATE_LIMIT: "0", LOG_LEVEL: "warn" };
let fair = "";
let unfair = "";
const tenantA = `A-${stack.id}`;
const tenantB = `B-${stack.id}`;

beforeAll(async () => {
  await stack.startServices("identity", "bridge");
  // The default 8 seats per service and 10 s wait, and a tenant's queue of 128 (64 by default):
  // the deeper A's backlog, the longer its calls wait against B's, whatever the machine's load.
  fair = await stack.startGateway({ ...common, VNM_SEAT_QUEUE: "128" }, false);
  unfair = await stack.startGateway({ ...common, VNM_SEATS_PER_SERVICE: "0" }, false);
  for (const [name, tenantId] of [
    ["a1", tenantA],
    ["a2", tenantA],
    ["a3", tenantA],
    ["b", tenantB],
  ]) {
    const r = await http("POST", `${fair}/users`, { name: `${name}-${stack.id}`, password: PASSWORD, tenantId, roles: ["tenant_admin"] }, { "x-auth-token": stack.adminToken });
    if (r.status !== 201) throw new Error(`user ${name}: ${r.status} ${r.text}`);
  }
});

afterAll(async () => {
  await stack.stop();
});

interface Timed {
  /** When it was sent, ms since the epoch (the same clock in every thread). */
  at: number;
  ms: number;
  status: number;
  /** Any answer but a 201. */
  answer?: { status: number; headers: Record<string, string>; text: string };
}

const quantile = (q: number) => (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? Number.NaN;
};
const p99 = quantile(0.99);
const p50 = quantile(0.5);

/** Creates of `tenant`'s bridges by `workers` loops for `ms`; every answer timed (fetch errors are status 0). */
async function creates(base: string, tokens: string[], tenant: string, workers: number, ms: number, refusedPauseMs: number): Promise<Timed[]> {
  const out: Timed[] = [];
  const now = () => performance.timeOrigin + performance.now();
  const until = now() + ms;
  let n = 0;
  const worker = async (w: number) => {
    while (now() < until) {
      const at = now();
      const r = await fetch(`${base}/bridges`, {
        method: "POST",
        headers: { "x-auth-token": tokens[w % tokens.length]!, "content-type": "application/json" },
        body: JSON.stringify({ name: `${tenant}-${n++}`, tenantId: tenant }),
      }).then(
        async (res) => ({ status: res.status, headers: Object.fromEntries(res.headers), text: await res.text() }),
        () => undefined,
      );
      out.push({ at, ms: now() - at, status: r?.status ?? 0, ...(r && r.status !== 201 ? { answer: r } : {}) });
      if (r?.status === 429) await new Promise((resolve) => setTimeout(resolve, refusedPauseMs));
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  return out;
}

/** `creates` in a thread of its own: the flood's answers take no turn of the event loop that times B's. */
function createsInThread(...args: Parameters<typeof creates>): Promise<Timed[]> {
  const code = `const { parentPort, workerData } = require("node:worker_threads");
const creates = ${creates.toString()};
creates(...workerData).then((r) => parentPort.postMessage(r));`;
  const w = new Worker(code, { eval: true, workerData: args });
  return new Promise((resolve, reject) => {
    w.once("message", (r: Timed[]) => {
      void w.terminate();
      resolve(r);
    });
    w.once("error", reject);
  });
}

/** An answer kept by `creates` as the harness's HttpResult. */
function asResult(t: Timed): HttpResult {
  const a = t.answer!;
  let json: unknown;
  try {
    json = JSON.parse(a.text);
  } catch {}
  return { status: a.status, headers: new Headers(a.headers), text: a.text, json };
}

/** The most callers the bridge service's Postgres pool had waiting, sampled every 50 ms while `during` runs. */
async function poolWaiting<T>(during: Promise<T>): Promise<{ result: T; maxWaiting: number }> {
  let maxWaiting = 0;
  let done = false;
  const sampling = (async () => {
    while (!done) {
      const text = await (await fetch(`http://${stack.metricsAddrs.get("bridge")}/metrics`)).text().catch(() => "");
      const m = /^vnm_pg_pool_connections\{[^}]*state="waiting"[^}]*\} (\d+)/m.exec(text);
      if (m) maxWaiting = Math.max(maxWaiting, Number(m[1]));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const result = await during;
  done = true;
  await sampling;
  return { result, maxWaiting };
}

/** A's flood and B's light load at `base`, at the same time; B's answers and A's within B's seconds. */
async function flood(base: string) {
  const a = [await stack.login(base, `a1-${stack.id}`, PASSWORD), await stack.login(base, `a2-${stack.id}`, PASSWORD), await stack.login(base, `a3-${stack.id}`, PASSWORD)];
  const b = [await stack.login(base, `b-${stack.id}`, PASSWORD)];
  // Each token checked once before (a new token's first request asks the identity service).
  for (const t of [...a, ...b]) expect((await http("GET", `${base}/bridges?limit=1`, undefined, { "x-auth-token": t })).status).toBe(200);
  const start = performance.timeOrigin + performance.now();
  const aRun = createsInThread(base, a, tenantA, FLOOD, FLOOD_MS, REFUSED_PAUSE_MS);
  await new Promise((resolve) => setTimeout(resolve, LEAD_MS));
  const bRun = creates(base, b, tenantB, LIGHT, FLOOD_MS - 2 * LEAD_MS, REFUSED_PAUSE_MS);
  const { result, maxWaiting } = await poolWaiting(Promise.all([aRun, bRun]));
  const [aAll, bAll] = result;
  const from = start + LEAD_MS;
  const to = start + FLOOD_MS - LEAD_MS;
  const aSame = aAll.filter((t) => t.at >= from && t.at + t.ms <= to);
  const created = (xs: Timed[]) => xs.filter((t) => t.status === 201).map((t) => t.ms);
  const figures = {
    aP50: p50(created(aSame)),
    bP50: p50(created(bAll)),
    aP99: p99(created(aSame)),
    bP99: p99(created(bAll)),
    aCreated: created(aAll).length,
    aRefused: aAll.filter((t) => t.status === 429).length,
    bCreated: created(bAll).length,
    maxWaiting,
  };
  console.log(`fair-share at ${base === fair ? "the gateway with seats" : "the gateway without seats"}: ${JSON.stringify(figures, (_, v: unknown) => (typeof v === "number" ? Math.round(v) : v))}`);
  return { aAll, bAll, ...figures };
}

describe("fair shares of a service", () => {
  it("keep a light tenant's p99 at most half a flooding tenant's, refusing the flood's excess with 429", { timeout: 90_000 }, async () => {
    const f = await flood(fair);
    // B's writes wait for no more than a seat coming free; A's wait behind its own queue.
    expect(f.bCreated).toBeGreaterThan(50);
    expect(f.bP99).toBeLessThanOrEqual(f.aP99 / 2);
    // B is never refused; A's excess is, with the error body and Retry-After; nothing else.
    expect(f.bAll.filter((t) => t.status !== 201).map((t) => t.answer ?? "no answer")).toEqual([]);
    expect(f.aRefused).toBeGreaterThan(0);
    for (const t of f.aAll.filter((x) => x.status !== 201)) {
      expectError(asResult(t), 429);
      expect(Number(t.answer!.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    expect(f.aCreated).toBeGreaterThan(100);
    // A's backlog waits at the gateway, not in the service's Postgres pool (10 connections): the
    // gateway lets at most 16 calls reach the service (8 seats, twice that for a tenant alone),
    // so few callers ever wait in the pool; without seats, most of the flood waited there, first
    // come first served.
    expect(f.maxWaiting).toBeLessThanOrEqual(16);

    // One shared queue (no seats): B waits behind A's backlog, as before.
    const u = await flood(unfair);
    expect(u.bP99).toBeGreaterThan(u.aP99 / 2);
    expect(u.maxWaiting).toBeGreaterThan(FLOOD / 2);
  });
});
