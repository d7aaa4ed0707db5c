// A measurement, not a test (docs/decisions.md, "Paging": a whole list is read a page at a time);
// the bench's big-list row (`npm run bench -- --only biglist`) makes the same reading over bridges
// made through the API, this one at any sizes in seconds:
// an administrator's unpaged GET /bridges over many bridges. Starts identity, bridge and a gateway
// (a test stack: schemas, roles and prefixes of their own, gone at the end), inserts bridges straight into the table up to each count
// asked for, then reads the whole list as fast as it comes; prints the time to the first byte
// and to the last, the body's size, and how far the gateway's and the bridge service's resident
// memory rose above where it stood before the request (sampled every 5 ms).
// Run: ./node_modules/.bin/node bench/src/measure-big-list.ts [count,count,...]
import { Stack } from "@vnm/e2e/stack";
import { DEPS } from "@vnm/kit/testing";
import pg from "pg";
import { readAll } from "./big-list.ts";

const COUNTS = (process.argv[2] ?? "20000,100000").split(",").map(Number);
// Identity, bridge and a gateway of a stack of their own (the test harness's); no rate limit.
const stack = new Stack({ VNM_RATE_LIMIT: "0", LOG_LEVEL: "warn" });
await stack.startServices("identity", "bridge");
const bridgeService = stack.procs.at(-1)!;
const base = await stack.startGateway({}, false);
const gateway = stack.procs.at(-1)!;
const token = stack.adminToken;
const pids = { gateway: gateway.child.pid!, bridge: bridgeService.child.pid! };
const api = (url: string) => fetch(url, { headers: { "x-auth-token": token, accept: "application/json" } });

const db = new pg.Client({ connectionString: DEPS.databaseUrl });
await db.connect();
let have = 0;
for (const count of COUNTS) {
  // Straight into the bridge service's table: 100,000 creations through the API would take minutes.
  await db.query(`INSERT INTO ${stack.schema("bridge")}.bridges (id, tenant_id, name) SELECT gen_random_uuid(), 't' || (n % 50), 'bridge ' || n FROM generate_series($1::int, $2::int) n`, [have + 1, count]);
  have = count;
  await new Promise((r) => setTimeout(r, 3_000));
  for (let run = 1; run <= 2; run++) {
    const m = await readAll(`${base}/bridges`, api, pids);
    const mib = (n: number) => `${n.toFixed(1)} MiB`;
    console.log(
      `${count} bridges, run ${run}: ${m.items} items, ${(m.bytes / 1e6).toFixed(1)} MB; first byte ${m.firstByteMs.toFixed(0)} ms, last ${m.lastByteMs.toFixed(0)} ms; RSS rise: gateway ${mib(m.rise.gateway)}, bridge service ${mib(m.rise.bridge)}`,
    );
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

await db.end();
await stack.stop();
process.exit(0);
