// Zero-downtime operations: `npm start -- --split --replicas 2` (two processes of the gateway,
// sharing PORT, and of every service) on the machine's Postgres (a database of its own), NATS
// and Redis. Under a mixed read/write load, with event streams open, SIGHUP to the launcher
// replaces every process one at a time: no request fails, and every stream, ended by the
// gateway that stops, resumes at the other with Last-Event-ID and misses no event. A process
// that exits, killed or stopped with SIGTERM, is started again.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { connect } from "nats";
import pg from "pg";
import { roleName } from "@vnm/kit";
import { deleteStreams, serviceDomains } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEPS, freePort, type Proc, startProcess, waitFor } from "../harness/harness.ts";

const id = `roll${randomBytes(4).toString("hex")}`;
const database = `vnm_${id}`;
const password = randomBytes(12).toString("hex");
let base = "";
let launcher: Proc;
let said = "";
let token = "";

const dbUrl = (name: string) => {
  const u = new URL(DEPS.databaseUrl);
  u.pathname = `/${name}`;
  return u.toString();
};

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: DEPS.databaseUrl });
  await client.connect();
  await client.query(sql).finally(() => client.end());
}

beforeAll(async () => {
  await admin(`CREATE DATABASE ${database}`);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  launcher = startProcess("deploy/launcher.ts", {
    PORT: String(port),
    DATABASE_URL: dbUrl(database),
    NATS_URL: DEPS.natsUrl,
    REDIS_URL: DEPS.redisUrl,
    VNM_BUS_PREFIX: id,
    VNM_ADMIN_PASSWORD: password,
    // The load is one token's: well over the default 1000 requests in 10 s.
    VNM_RATE_LIMIT: "0",
  }, [], ["--split", "--replicas", "2"]);
  launcher.child.stdout!.on("data", (d: Buffer) => {
    said += d.toString();
  });
  await waitFor("the launcher's summary", async () => said.includes("[launcher] ready"), 150_000);
  await waitFor("every part ready", async () => ((await (await fetch(`${base}/readyz`)).json()) as { status: string }).status === "ok", 30_000);
  const r = await fetch(`${base}/login`, { method: "POST", headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString("base64")}` } });
  token = ((await r.json()) as { key: string }).key;
}, 200_000);

afterAll(async () => {
  // Every process drained and gone before their data goes (Proc.stop would kill the launcher after 5 s).
  if (launcher && launcher.child.exitCode === null) {
    const exited = new Promise((r) => launcher.child.once("exit", r));
    launcher.child.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
  }
  await launcher?.stop("SIGKILL");
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  // The services' roles the launcher made in that database's name (roles belong to the cluster).
  for (const d of serviceDomains()) await admin(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(roleName(dbUrl(database), d))}`);
  const nc = await connect({ servers: DEPS.natsUrl });
  await deleteStreams(nc, id);
  await nc.close();
  const redis = new Redis(DEPS.redisUrl);
  const keys = await redis.keys(`${id}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
}, 60_000);

interface Load {
  latencies: number[];
  failures: string[];
  created: string[];
  stop(): Promise<void>;
}

/** `workers` loops of create, read, list, rename, each waiting for its answer; every answer not the one expected is a failure. */
function runLoad(workers: number): Load {
  const load: Load = { latencies: [], failures: [], created: [], stop: async () => {} };
  const headers = { "x-auth-token": token, "content-type": "application/json" };
  let running = true;
  const timed = async (what: string, expected: number, path: string, init: RequestInit = {}) => {
    const started = performance.now();
    try {
      const r = await fetch(`${base}${path}`, { ...init, headers });
      const body = await r.text();
      if (r.status !== expected) load.failures.push(`${what}: ${r.status} ${body.slice(0, 200)}`);
      load.latencies.push(performance.now() - started);
      return r.status === expected && body ? JSON.parse(body) : undefined;
    } catch (err) {
      load.failures.push(`${what}: ${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? "")}`);
    }
  };
  const loop = async (w: number) => {
    for (let i = 0; running; i++) {
      const made = await timed("create", 201, "/bridges", { method: "POST", body: JSON.stringify({ name: `w${w}-${i}`, tenantId: id }) });
      if (!made) continue;
      load.created.push(made.id);
      await timed("read", 200, `/bridges/${made.id}`);
      await timed("list", 200, `/bridges?tenant_id=${id}&limit=20`);
      await timed("rename", 200, `/bridges/${made.id}`, { method: "PUT", body: JSON.stringify({ name: `w${w}-${i}-renamed`, tenantId: id }) });
    }
  };
  const loops = Array.from({ length: workers }, (_, w) => loop(w));
  load.stop = async () => {
    running = false;
    await Promise.all(loops);
  };
  return load;
}

interface Follower {
  /** Ids of the bridges whose creation the stream told. */
  created: Set<string>;
  /** How many times the stream was ended by a gateway and resumed. */
  resumed: number;
  failures: string[];
  stop(): void;
}

/** An event stream that reconnects when it ends, after the `retry:` it was given, with Last-Event-ID. */
function follow(): Follower {
  const f: Follower = { created: new Set(), resumed: -1, failures: [], stop: () => {} };
  const ac = new AbortController();
  f.stop = () => ac.abort();
  let last: string | undefined;
  let retry = 2_000;
  const readOnce = async () => {
    const headers: Record<string, string> = { "x-auth-token": token, accept: "text/event-stream" };
    if (last) headers["last-event-id"] = last;
    const res = await fetch(`${base}/events`, { headers, signal: ac.signal });
    if (res.status !== 200) return void f.failures.push(`/events: ${res.status} ${await res.text()}`);
    f.resumed++;
    let buffer = "";
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
        const fields = new Map(buffer.slice(0, i).split("\n").map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()] as const));
        buffer = buffer.slice(i + 2);
        if (fields.has("retry")) retry = Number(fields.get("retry"));
        if (fields.has("id")) last = fields.get("id");
        if (fields.get("event") === "created") f.created.add(JSON.parse(fields.get("data")!).id);
      }
    }
  };
  void (async () => {
    while (!ac.signal.aborted) {
      await readOnce().catch((err: Error) => ac.signal.aborted || f.failures.push(`/events: ${err.message}`));
      await new Promise((r) => setTimeout(r, retry));
    }
  })();
  return f;
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))] ?? 0;

it("SIGHUP replaces every process one at a time: no request fails, every event stream resumes and misses nothing", async () => {
  const feeds = [follow(), follow(), follow()];
  await waitFor("the streams open", async () => feeds.every((f) => f.resumed === 0));
  const load = runLoad(4);
  await new Promise((r) => setTimeout(r, 1_000));
  const before = load.latencies.length;
  const rolled = said.length;
  const started = Date.now();
  process.kill(launcher.child.pid!, "SIGHUP");
  await waitFor("the rolling restart", async () => said.slice(rolled).includes("rolling restart done"), 240_000);
  const took = Date.now() - started;
  console.log(said.slice(rolled).split("\n").filter((l) => l.startsWith("[launcher]")).join("\n"));
  const during = load.latencies.slice(before);
  await new Promise((r) => setTimeout(r, 1_000));
  await load.stop();
  console.log(`rolling restart in ${took} ms: ${during.length} requests during the roll, p50 ${percentile(during, 50).toFixed(1)} ms, p99 ${percentile(during, 99).toFixed(1)} ms, max ${Math.max(...during).toFixed(1)} ms`);
  const processes = 2 * (serviceDomains().length + 1);
  expect(said.slice(rolled)).toContain(`rolling restart done: ${processes} of ${processes} processes replaced`);
  expect(load.failures).toEqual([]);
  expect(load.created.length).toBeGreaterThan(50);
  // No write was sent twice: the tenant has exactly the bridges the load created.
  const all = await fetch(`${base}/bridges?tenant_id=${id}`, { headers: { "x-auth-token": token } });
  expect(((await all.json()) as { id: string }[]).map((b) => b.id).sort()).toEqual([...load.created].sort());
  await waitFor("every event delivered", async () => feeds.every((f) => load.created.every((c) => f.created.has(c))), 15_000).catch(() => {});
  for (const f of feeds) f.stop();
  for (const f of feeds) {
    expect(f.failures).toEqual([]);
    // Both gateway processes were replaced: a stream was ended at least once.
    expect(f.resumed).toBeGreaterThanOrEqual(1);
    expect(load.created.filter((c) => !f.created.has(c))).toEqual([]);
  }
}, 300_000);

/** The launcher's processes running a script under `folder` ("services/tracing/"): their pids. */
const processesOf = (folder: string) =>
  execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(launcher.child.pid)], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.includes(folder))
    .map((l) => Number(l.trim().split(" ")[0]));

it("a process that dies, whatever the cause, is replaced", async () => {
  const [tracing] = processesOf("services/tracing/");
  const from = said.length;
  process.kill(tracing!, "SIGKILL");
  await waitFor("its replacement", async () => /\[launcher\] tracing exited \(SIGKILL\); starting another/.test(said.slice(from)), 10_000);
  await waitFor("two tracing processes again", async () => processesOf("services/tracing/").length === 2 && !processesOf("services/tracing/").includes(tracing!));
  await waitFor("every part ready", async () => ((await (await fetch(`${base}/readyz`)).json()) as { status: string }).status === "ok", 30_000);
}, 60_000);

it("a gateway process stopped with SIGTERM is replaced: the shared port answers again", async () => {
  const before = processesOf("gateway/");
  expect(before).toHaveLength(2);
  const from = said.length;
  // Both: with one left, the port would answer whether or not the other came back.
  for (const pid of before) process.kill(pid, "SIGTERM");
  const exits = () => [...said.slice(from).matchAll(/\[launcher\] gateway exited \((\w+)\); starting another/g)].map((m) => m[1]);
  await waitFor("both gateway processes to exit", async () => exits().length === 2, 15_000);
  // They drained and stopped on their own (status 0), and were started again all the same.
  expect(exits()).toEqual(["0", "0"]);
  await waitFor("the gateway answering again", async () => (await fetch(`${base}/bridges?limit=1`, { headers: { "x-auth-token": token } })).status === 200, 15_000);
  // The second one starts a little later (the launcher waits longer after each exit of a part).
  await waitFor("two new gateway processes", async () => {
    const now = processesOf("gateway/");
    return now.length === 2 && !now.some((pid) => before.includes(pid));
  }, 15_000);
}, 60_000);
