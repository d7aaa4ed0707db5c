// Devices that refuse the service's writes, or answer them too slowly (issue 53: the hostile-device
// bounds hold on the write side too): the tunnel service, a real process on the machine's
// Postgres, against fake VTEPs that answer the reconcile's read with an mn- switch nobody binds
// (so the service writes, deleting it) and then refuse that write or never answer it. Each costs
// that device's session, its VTEP says why in connectionError, the session is tried again, and
// the process and a well-behaved VTEP beside it carry on.
import { type DirectService, directService, waitFor } from "@vnm/kit/testing";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { FakeVtep, type PeerSession } from "./fake-vtep.ts";

const VTEPS = "vnm.tunnel.v1.VtepService";
let svc: DirectService;
let zoneId: string;
let goodId: string;
const fakes: FakeVtep[] = [];

const SWITCH = "10000000-0000-4000-8000-000000000001";
/** What the reconcile's read (one transact of selects) finds: the VTEP's switch and an mn- switch no bridge binds. */
const READ = [
  { rows: [{ _uuid: ["uuid", SWITCH], management_ips: "127.0.0.1", ports: ["set", []] }] },
  { rows: [] },
  { rows: [{ _uuid: ["uuid", "20000000-0000-4000-8000-000000000002"], name: "mn-9a7a3d6e-0000-4000-8000-000000000000", tunnel_key: 10_001 }] },
  { rows: [] },
  { rows: [] },
  { rows: [] },
  { rows: [] },
  { rows: [] },
];

/** The handshake, the learned-MAC monitor and the read answered; `write` answers the write (or not). */
async function refusing(s: PeerSession, write: (req: { id: unknown; params: unknown[] }) => Promise<void>): Promise<void> {
  await s.handshake({ name: "refusing", ports: 0 }, false);
  const learned = await s.next("monitor");
  await s.write(JSON.stringify({ id: learned.id, result: {}, error: null }));
  const read = await s.next("transact");
  await s.write(JSON.stringify({ id: read.id, result: READ, error: null }));
  await write(await s.next("transact"));
}

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

async function getVtep(id: string): Promise<{ connectionState: string; connectionError?: string | null }> {
  const r = await svc.call(VTEPS, "GetVtep", { id });
  if (r.err) throw r.err;
  return r.res;
}

beforeAll(async () => {
  svc = await directService("tunnel", { VNM_VTEP_ALLOWED_NETWORKS: "127.0.0.0/8" });
  const z = await svc.call("vnm.tunnel.v1.TunnelZoneService", "CreateTunnelZone", { tunnelZone: { name: "refusing", type: "vtep" } });
  zoneId = z.res.id;
  const good = await fake((s) => s.handshake({ name: "good" }));
  goodId = await createVtep(good.port);
  await waitFor("the good VTEP connected", async () => (await getVtep(goodId)).connectionState === "connected", 10_000);
});

afterEach(async () => {
  expect(svc.proc.child.exitCode, svc.output().slice(-2000)).toBeNull();
  const started = performance.now();
  expect(await getVtep(goodId)).toMatchObject({ connectionState: "connected" });
  expect(performance.now() - started).toBeLessThan(500);
});

afterAll(async () => {
  for (const f of fakes) await f.close();
  await svc?.stop();
});

it("a device that refuses a write (a referential integrity violation after the operations) costs that session: its VTEP is in error saying the device's reason, and it is tried again", async () => {
  const f = await fake((s) =>
    refusing(s, (req) =>
      s.write(JSON.stringify({ id: req.id, result: [...(req.params.slice(1) as unknown[]).map(() => ({})), { error: "referential integrity violation", details: "cannot delete Logical_Switch row because of 1 remaining reference(s)" }], error: null })),
    ),
  );
  const id = await createVtep(f.port);
  await waitFor("error naming the refusal", async () => /refused/.test((await getVtep(id)).connectionError ?? ""), 15_000);
  expect((await getVtep(id)).connectionError).toBe(
    'session dropped: the device refused a transaction: referential integrity violation (cannot delete Logical_Switch row because of 1 remaining reference(s)) (refused_write)',
  );
  // The session, not the service: it is tried again, and the device refused again.
  await waitFor("a second session", async () => f.sessions.length >= 2, 15_000);
  expect(svc.output()).toContain("VTEP session dropped: the device refused a transaction");
});

it("a device that answers an operation's error in its place (a constraint violation) is the same", async () => {
  const f = await fake((s) => refusing(s, (req) => s.write(JSON.stringify({ id: req.id, result: [{ error: "constraint violation", details: "Logical_Switch has 2 rows named mn-…" }], error: null }))));
  const id = await createVtep(f.port);
  await waitFor("error naming the refusal", async () => /constraint violation/.test((await getVtep(id)).connectionError ?? ""), 15_000);
  expect((await getVtep(id)).connectionError).toMatch(/^session dropped: the device refused a transaction: constraint violation \(Logical_Switch has 2 rows named mn-…\) \(refused_write\)$/);
});

it("a device that answers the transaction with a JSON-RPC error is the same", async () => {
  const f = await fake((s) => refusing(s, (req) => s.write(JSON.stringify({ id: req.id, result: null, error: { error: "not allowed" } }))));
  const id = await createVtep(f.port);
  await waitFor("error naming the refusal", async () => /refused/.test((await getVtep(id)).connectionError ?? ""), 15_000);
  expect((await getVtep(id)).connectionError).toMatch(/^session dropped: the device refused a transaction: OVSDB error: .*not allowed.*\(refused_write\)$/);
});

it("a device that never answers a write costs that session after 3 s (no_answer), and it is tried again", async () => {
  const f = await fake((s) => refusing(s, async () => {}));
  const id = await createVtep(f.port);
  await waitFor("error naming the silence", async () => /no answer/.test((await getVtep(id)).connectionError ?? ""), 15_000);
  expect((await getVtep(id)).connectionError).toBe("session dropped: no answer to transact within 3000 ms (no_answer)");
  await waitFor("a second session", async () => f.sessions.length >= 2, 15_000);
});

it("a device that refuses the learned-MAC monitor (an older schema) keeps its session: connected, its learned MACs read by the periodic pass", async () => {
  const f = await fake(async (s) => {
    await s.handshake({ name: "older" }, false);
    const learned = await s.next("monitor");
    await s.write(JSON.stringify({ id: learned.id, result: null, error: { error: "unknown table", details: "No table named Ucast_Macs_Local." } }));
    s.answerTheRest();
  });
  const id = await createVtep(f.port);
  await waitFor("connected", async () => (await getVtep(id)).connectionState === "connected", 10_000);
  await new Promise((r) => setTimeout(r, 4_000)); // past a periodic reconcile and an answer's timeout
  const v = await getVtep(id);
  expect([v.connectionState, v.connectionError ?? null]).toEqual(["connected", null]);
  expect(f.sessions).toHaveLength(1);
});
