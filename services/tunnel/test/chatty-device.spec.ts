// A device that keeps changing one port of many: the tunnel service, a real process on the
// machine's Postgres, against a fake VTEP on loopback. What a write stores is the port that
// changed, not the device's whole state; writes of one VTEP are coalesced to one per configured
// interval (after a burst of two), the newest state winning; a device whose state outgrows its budget is refused, and
// its VTEP says so. The figures measured are printed.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { DEPS, type DirectService, directService, waitFor } from "@vnm/kit/testing";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeVtep, type PeerSession } from "./fake-vtep.ts";

const VTEPS = "vnm.tunnel.v1.VtepService";
const BUDGET = 4 * 1024 * 1024;
const INTERVAL_MS = 1_000;
let svc: DirectService;
let db: pg.Client;
let zoneId: string;
const fakes: FakeVtep[] = [];
const figures: Record<string, string> = {};

const uuidOf = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
/** About 1,000 characters that compress badly, as a device's own text would be stored. */
const noise = (n = 1_000) => randomBytes(Math.ceil((n * 3) / 4)).toString("base64").slice(0, n);

interface Port {
  name: string;
  description: string;
}

/** Ports of about 2 KiB each (a 1,000-character name and description). */
const portsOf = (from: number, n: number): Map<string, Port> => {
  const out = new Map<string, Port>();
  for (let i = from; i < from + n; i++) out.set(uuidOf(i), { name: `p${String(i).padStart(5, "0")}-${noise(990)}`, description: noise() });
  return out;
};

const switchUpdate = (ports: Map<string, Port>) => ({
  "10000000-0000-4000-8000-000000000001": {
    new: { name: "chatty", description: "", management_ips: "127.0.0.1", tunnel_ips: ["set", ["10.0.0.1"]], ports: ["set", [...ports.keys()].map((u) => ["uuid", u])] },
  },
});
const portUpdates = (ports: Map<string, Port>, only?: string[]) =>
  Object.fromEntries((only ?? [...ports.keys()]).map((u) => [u, { new: ports.get(u) }]));

/** Answers list_dbs and a monitor with this switch and its ports, then echoes and the rest (fake-vtep.ts). */
async function handshake(s: PeerSession, ports: Map<string, Port>): Promise<void> {
  const dbs = await s.next("list_dbs");
  await s.write(JSON.stringify({ id: dbs.id, result: ["hardware_vtep"], error: null }));
  const mon = await s.next("monitor");
  await s.write(JSON.stringify({ id: mon.id, result: { Physical_Switch: switchUpdate(ports), Physical_Port: portUpdates(ports) }, error: null }));
  s.answerEchoes();
  s.answerTheRest();
}

const update = (s: PeerSession, tables: Record<string, unknown>) => s.write(JSON.stringify({ id: null, method: "update", params: ["vnm", tables] }));

async function fake(script: (s: PeerSession) => Promise<void> | void): Promise<FakeVtep> {
  const f = await FakeVtep.start(script);
  fakes.push(f);
  return f;
}

async function createVtep(port: number): Promise<string> {
  const r = await svc.call(VTEPS, "CreateVtep", { vtep: { managementIp: "127.0.0.1", managementPort: port, tunnelZoneId: zoneId } });
  expect(r.err).toBeNull();
  return r.res.id as string;
}

const getVtep = async (id: string) => (await svc.call(VTEPS, "GetVtep", { id })).res as { connectionState: string; name: string };
const listPorts = async (id: string) => ((await svc.call(VTEPS, "ListVtepPorts", { id })).res.items ?? []) as Port[];

const rssMiB = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${svc.proc.child.pid}/status`, "utf8"))?.[1]) / 1024;

/** Bytes of the service's tables, their TOAST and indexes (autovacuum is off here: nothing is given back meanwhile). */
async function schemaBytes(): Promise<number> {
  const r = await db.query<{ bytes: string }>(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
    [svc.schema],
  );
  return Number(r.rows[0]!.bytes);
}

const walLsn = async () => (await db.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn")).rows[0]!.lsn;
const walBytes = async (from: string) => Number((await db.query<{ d: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS d", [from])).rows[0]!.d);

type Written = Record<string, { ins: number; upd: number; del: number }>;
/**
 * Rows inserted, updated and deleted per table of the service, once the server's statistics
 * settle: a busy backend reports them within 10 s of going idle (PostgreSQL's idle stats interval),
 * so they are read when unchanged for 11 s.
 */
async function written(): Promise<Written> {
  const read = async () => {
    await db.query("SELECT pg_stat_clear_snapshot()");
    const r = await db.query<{ relname: string; ins: string; upd: string; del: string }>(
      "SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del FROM pg_stat_user_tables WHERE schemaname = $1",
      [svc.schema],
    );
    return Object.fromEntries(r.rows.map((row) => [row.relname, { ins: Number(row.ins), upd: Number(row.upd), del: Number(row.del) }]));
  };
  let last = await read();
  let since = Date.now();
  while (Date.now() - since < 11_000) {
    await new Promise((r) => setTimeout(r, 1_000));
    const now = await read();
    if (JSON.stringify(now) !== JSON.stringify(last)) since = Date.now();
    last = now;
  }
  return last;
}
type Op = "ins" | "upd" | "del";
const delta = (after: Written, before: Written, table: string, ops: Op[] = ["ins", "upd", "del"]) =>
  ops.reduce((n, op) => n + (after[table]?.[op] ?? 0) - (before[table]?.[op] ?? 0), 0);

beforeAll(async () => {
  svc = await directService("tunnel", { VNM_VTEP_ALLOWED_NETWORKS: "127.0.0.0/8", VNM_VTEP_STATE_BUDGET_BYTES: String(BUDGET), VNM_VTEP_WRITE_INTERVAL_MS: String(INTERVAL_MS) });
  db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  const z = await svc.call("vnm.tunnel.v1.TunnelZoneService", "CreateTunnelZone", { tunnelZone: { name: "devices", type: "vtep" } });
  zoneId = z.res.id;
});

afterAll(async () => {
  console.log(`chatty-device figures: ${Object.entries(figures)
    .map(([k, v]) => `${k}: ${v}`)
    .join("; ")}`);
  for (const f of fakes) await f.close();
  await db?.end();
  await svc?.stop();
});

it("a device changing one of 1,500 ports of 2 KiB every 100 ms: each write stores that port, at most one write per interval", async () => {
  const PORTS = 1_500;
  const CHATTY_MS = 6_000;
  const ports = portsOf(0, PORTS);
  const first = uuidOf(0);
  let chatting = true;
  let changes = 0;
  let started!: () => void;
  const go = new Promise<void>((r) => {
    started = r;
  });
  const f = await fake(async (s) => {
    await handshake(s, ports);
    await go;
    while (chatting && !s.socket.destroyed) {
      ports.set(first, { ...ports.get(first)!, description: `change ${++changes} ${noise()}` });
      await update(s, { Physical_Port: portUpdates(ports, [first]) });
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  const id = await createVtep(f.port);
  await waitFor("the device's ports stored", async () => (await getVtep(id)).connectionState === "connected" && (await listPorts(id)).length === PORTS, 30_000);
  const stateBytes = [...ports.values()].reduce((n, p) => n + p.name.length + p.description.length, 0);

  const before = await written();
  const [bytes0, lsn0, rss0] = [await schemaBytes(), await walLsn(), rssMiB()];
  let peak = rss0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB());
  }, 50);
  started();
  await new Promise((r) => setTimeout(r, CHATTY_MS));
  chatting = false;
  const newest = ports.get(first)!.description;
  await waitFor("the newest state served", async () => (await listPorts(id)).some((p) => p.description === newest), 10_000);
  clearInterval(sampler);
  const after = await written();
  const grown = (await schemaBytes()) - bytes0;
  const wal = await walBytes(lsn0);
  // Two change notifications per write: the VTEP's and the one port's it stores.
  const writes = delta(after, before, "outbox", ["ins"]) / 2;
  figures["chatty device"] =
    `${changes} changes of 1 of ${PORTS} ports (${(stateBytes / 2 ** 20).toFixed(1)} MiB of state) in ${CHATTY_MS / 1000} s; ${writes} writes; ` +
    `tables grew ${(grown / 2 ** 20).toFixed(2)} MiB; WAL ${(wal / 2 ** 20).toFixed(1)} MiB (the whole server's); RSS ${rss0.toFixed(0)} -> peak ${peak.toFixed(0)} MiB; ` +
    `row versions written: ${JSON.stringify(Object.fromEntries(Object.keys(after).map((t) => [t, delta(after, before, t)])))}`;

  // What is written is proportional to the change (one port of ~2 KiB a write), not to the state.
  expect(changes).toBeGreaterThan(30);
  expect(grown).toBeLessThan(512 * 1024);
  expect(delta(after, before, "vtep_ports")).toBeLessThanOrEqual(writes);
  expect(delta(after, before, "vteps")).toBe(0);
  // Coalesced: one write per interval after a burst of two (and one for the newest state after
  // the last change), the newest state winning.
  expect(writes).toBeGreaterThanOrEqual(2);
  expect(writes).toBeLessThanOrEqual(CHATTY_MS / INTERVAL_MS + 3);
  const stored = await listPorts(id);
  expect(stored).toHaveLength(PORTS);
  expect(stored.map((p) => p.name)).toEqual([...ports.values()].map((p) => p.name).sort((a, b) => a.localeCompare(b)));
}, 120_000);

it("a device whose state outgrows the budget is refused: its VTEP is in error, keeps no ports, and the log says why", async () => {
  const ports = portsOf(0, 1_500); // ~2.9 MiB: under the 4 MiB budget
  const f = await fake(async (s) => {
    await handshake(s, ports);
    await new Promise((r) => setTimeout(r, 1_500));
    // 1,000 more ports of 2 KiB: ~4.9 MiB in all.
    const more = portsOf(1_500, 1_000);
    for (const [u, p] of more) ports.set(u, p);
    await update(s, { Physical_Switch: switchUpdate(ports), Physical_Port: portUpdates(more) });
  });
  const id = await createVtep(f.port);
  await waitFor("connected under the budget", async () => (await getVtep(id)).connectionState === "connected" && (await listPorts(id)).length === 1_500, 30_000);
  await waitFor("refused over the budget", async () => (await getVtep(id)).connectionState === "error", 15_000);
  expect(await listPorts(id)).toEqual([]);
  const log = svc
    .output()
    .split("\n")
    .filter((l) => l.includes(`127.0.0.1:${f.port}`))
    .join("\n");
  expect(log).toMatch(/over its budget of 4194304 bytes \(VNM_VTEP_STATE_BUDGET_BYTES\)/);
});
