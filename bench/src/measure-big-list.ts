// A measurement, not a test (docs/decisions.md, "Paging": a whole list is read a page at a time):
// an administrator's unpaged GET /bridges over many bridges. Starts identity, bridge and a gateway
// in a schema and prefix of their own, inserts bridges straight into the table up to each count
// asked for, then reads the whole list as fast as it comes; prints the time to the first byte
// and to the last, the body's size, and how far the gateway's and the bridge service's resident
// memory rose above where it stood before the request (sampled every 5 ms).
// Run: ./node_modules/.bin/node gateway/test/measure-big-list.ts [count,count,...]
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { addressVariable } from "@vnm/kit";
import { DEPS, deleteStreams, freePort, startProcess, waitFor } from "@vnm/kit/testing";
import { Redis } from "ioredis";
import { connect } from "nats";
import pg from "pg";

const COUNTS = (process.argv[2] ?? "20000,100000").split(",").map(Number);
const id = `m${randomBytes(4).toString("hex")}`;
const prefix = `vnm${id}`;
const password = randomBytes(12).toString("hex");
const env = { DATABASE_URL: DEPS.databaseUrl, NATS_URL: DEPS.natsUrl, REDIS_URL: DEPS.redisUrl, VNM_BUS_PREFIX: prefix, VNM_TOKEN_SECRET: randomBytes(24).toString("hex"), VNM_ADMIN_PASSWORD: password, VNM_RATE_LIMIT: "0" };
const addrs: Record<string, string> = {};
for (const d of ["identity", "bridge"]) addrs[addressVariable(d)] = `127.0.0.1:${await freePort()}`;
const services = Object.fromEntries(
  ["identity", "bridge"].map((d) => [d, startProcess(`services/${d}/src/main.ts`, { ...env, ...addrs, GRPC_PORT: addrs[addressVariable(d)]!.split(":")[1], VNM_DB_SCHEMA: `${d}_${id}` })]),
);
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const gateway = startProcess("gateway/src/main.ts", { ...env, ...addrs, PORT: String(port) });
let token = "";
await waitFor(
  "login",
  async () => {
    const r = await fetch(`${base}/login`, { method: "POST", headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString("base64")}` } });
    if (r.status === 200) token = ((await r.json()) as { key: string }).key;
    return r.status === 200;
  },
  60_000,
);

/** Resident memory of a process, in MiB. */
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

/** Reads the whole list; the time to its first and last byte, its size, and the peak RSS of each process above its start. */
async function measure(): Promise<{ first: number; last: number; bytes: number; items: number; rise: Record<string, number> }> {
  const pids = { gateway: gateway.child.pid!, bridge: services["bridge"]!.child.pid! };
  const start = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, rssOf(pid)]));
  const peak = { ...start };
  const sampler = setInterval(() => {
    for (const [k, pid] of Object.entries(pids)) peak[k] = Math.max(peak[k]!, rssOf(pid));
  }, 5);
  const t0 = performance.now();
  const r = await fetch(`${base}/bridges`, { headers: { "x-auth-token": token, accept: "application/json" } });
  const reader = r.body!.getReader();
  let first = 0;
  const chunks: Buffer[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!first) first = performance.now() - t0;
    chunks.push(Buffer.from(value));
  }
  const last = performance.now() - t0;
  clearInterval(sampler);
  const body = Buffer.concat(chunks);
  const items = (JSON.parse(body.toString()) as unknown[]).length;
  const rise = Object.fromEntries(Object.keys(pids).map((k) => [k, peak[k]! - start[k]!]));
  return { first, last, bytes: body.length, items, rise };
}

const db = new pg.Client({ connectionString: DEPS.databaseUrl });
await db.connect();
let have = 0;
for (const count of COUNTS) {
  await db.query(`INSERT INTO bridge_${id}.bridges (id, tenant_id, name) SELECT gen_random_uuid(), 't' || (n % 50), 'bridge ' || n FROM generate_series($1::int, $2::int) n`, [have + 1, count]);
  have = count;
  await new Promise((r) => setTimeout(r, 3_000));
  for (let run = 1; run <= 2; run++) {
    const m = await measure();
    const mib = (n: number) => `${n.toFixed(1)} MiB`;
    console.log(
      `${count} bridges, run ${run}: ${m.items} items, ${(m.bytes / 1e6).toFixed(1)} MB; first byte ${m.first.toFixed(0)} ms, last ${m.last.toFixed(0)} ms; RSS rise: gateway ${mib(m.rise["gateway"]!)}, bridge service ${mib(m.rise["bridge"]!)}`,
    );
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

await gateway.stop();
for (const p of Object.values(services)) await p.stop();
for (const d of ["identity", "bridge"]) await db.query(`DROP SCHEMA IF EXISTS ${d}_${id} CASCADE`);
await db.end();
const nc = await connect({ servers: DEPS.natsUrl });
await deleteStreams(nc, prefix);
await nc.close();
const redis = new Redis(DEPS.redisUrl);
const keys = await redis.keys(`${prefix}:*`);
if (keys.length > 0) await redis.del(...keys);
redis.disconnect();
process.exit(0);
