// A measurement, not a test (docs/decisions.md, "Logins, tokens and passwords under hostile use"): /healthz latency while 40 clients replay /events from 0.
// Starts identity, bridge and a gateway in a schema and prefix of their own, makes CHANGES
// changes, then polls /healthz while the clients read their replays; prints p50/p99/max.
// Run: ./node_modules/.bin/node bench/src/measure-events-replay.ts [changes] [clients]
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { addressVariable } from "@vnm/kit";
import { credentialEnv } from "@vnm/kit/repo";
import { DEPS, deleteStreams, freePort, serviceCredentials, startProcess, waitFor } from "@vnm/kit/testing";
import { connect } from "nats";
import pg from "pg";
import { stringMember } from "@vnm/kit/values";

const CHANGES = Number(process.argv[2] ?? 3000);
const CLIENTS = Number(process.argv[3] ?? 40);
const id = `m${randomBytes(4).toString("hex")}`;
const prefix = `vnm${id}`;
const password = randomBytes(12).toString("hex");
const env = { DATABASE_URL: DEPS.databaseUrl, NATS_URL: DEPS.natsUrl, REDIS_URL: DEPS.redisUrl, VNM_BUS_PREFIX: prefix, VNM_ADMIN_PASSWORD: password, VNM_RATE_LIMIT: "0", VNM_EVENT_STREAMS_PER_USER: String(CLIENTS) };
const made = serviceCredentials(["bridge", "gateway"]);
/** Each part's own credential; identity gets their hashes. */
const own = (part: string) => credentialEnv(made, part);
const procs = [];
const addrs: Record<string, string> = {};
for (const d of ["identity", "bridge"]) addrs[addressVariable(d)] = `127.0.0.1:${await freePort()}`;
for (const d of ["identity", "bridge"]) {
  procs.push(startProcess(`services/${d}/src/main.ts`, { ...env, ...addrs, ...own(d), GRPC_PORT: addrs[addressVariable(d)]!.split(":")[1], VNM_DB_SCHEMA: `${d}_${id}` }));
}
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
procs.push(startProcess("gateway/src/main.ts", { ...env, ...addrs, ...own("gateway"), PORT: String(port) }));
let token = "";
await waitFor("login", async () => {
  const r = await fetch(`${base}/login`, { method: "POST", headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString("base64")}` } });
  if (r.status === 200) token = stringMember(await r.json(), "key") ?? "";
  return r.status === 200;
}, 60_000);
const auth = { "x-auth-token": token };

async function makeChanges(): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < CHANGES) {
      next++;
      const r = await fetch(`${base}/bridges`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: `b${next}` }) });
      await r.text();
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/** Reads a replay from 0 until it has `count` events; resolves with the time taken. */
async function replay(count: number): Promise<{ ms: number; seen: number }> {
  const started = performance.now();
  const ac = new AbortController();
  const r = await fetch(`${base}/events`, { headers: { ...auth, accept: "text/event-stream", "last-event-id": "0" }, signal: ac.signal });
  const reader = r.body!.getReader();
  const decoder = new TextDecoder();
  let seen = 0;
  while (seen < count) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += (decoder.decode(value).match(/^id: /gm) ?? []).length;
  }
  ac.abort();
  return { ms: performance.now() - started, seen };
}

const t0 = performance.now();
await makeChanges();
console.log(`made ${CHANGES} changes in ${Math.round(performance.now() - t0)} ms`);
await new Promise((r) => setTimeout(r, 2_000));
// The probe runs on a thread of its own, so the figures are the gateway's, not the time this
// process takes to read 40 replays.
const probe = new Worker(
  `const { parentPort, workerData } = require("node:worker_threads");
  const latencies = [];
  let replaying = true;
  parentPort.once("message", () => { replaying = false; });
  (async () => {
    while (replaying) {
      const s = performance.now();
      await (await fetch(workerData + "/healthz")).text();
      latencies.push(performance.now() - s);
      await new Promise((r) => setTimeout(r, 2));
    }
    parentPort.postMessage(latencies);
  })();`,
  { eval: true, workerData: base },
);
const times = await Promise.all(Array.from({ length: CLIENTS }, () => replay(CHANGES)));
probe.postMessage("stop");
const [reply]: unknown[] = await once(probe, "message");
const latencies = Array.isArray(reply) ? reply.filter((x): x is number => typeof x === "number") : [];
latencies.sort((a, b) => a - b);
const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1);
console.log(`${CLIENTS} replays of ${CHANGES} events: slowest ${Math.round(Math.max(...times.map((t) => t.ms)))} ms, fewest events seen ${Math.min(...times.map((t) => t.seen))}`);
console.log(`/healthz during replay: n=${latencies.length} p50=${q(0.5)} ms p95=${q(0.95)} ms p99=${q(0.99)} ms max=${q(1)} ms`);

for (const p of procs) await p.stop();
const db = new pg.Client({ connectionString: DEPS.databaseUrl });
await db.connect();
for (const d of ["identity", "bridge"]) await db.query(`DROP SCHEMA IF EXISTS ${d}_${id} CASCADE`);
await db.end();
const nc = await connect({ servers: DEPS.natsUrl });
await deleteStreams(nc, prefix);
await nc.close();
process.exit(0);
