// Devices cannot hurt the control plane: the tunnel service, a real process on the machine's
// Postgres, against fake VTEPs that nest deep, answer huge, flood updates, go silent, send
// garbage, stop reading, close mid-message and reconnect in a loop. After each, the process is
// alive, a well-behaved VTEP beside them is still connected and answered quickly, and the
// misbehaving VTEP's state says what happened. The figures measured are printed.
import { readFileSync } from "node:fs";
import { type DirectService, directService, waitFor } from "@vnm/kit/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeVtep, type PeerSession, type SwitchSpec, tablesFor } from "./fake-vtep.ts";

const VTEPS = "vnm.tunnel.v1.VtepService";
let svc: DirectService;
let zoneId: string;
let good: FakeVtep;
let goodId: string;
let idleMiB = 0;
const fakes: FakeVtep[] = [];
const figures: Record<string, string> = {};

const rssMiB = (): number => {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${svc.proc.child.pid}/status`, "utf8"))?.[1];
  return Number(kb) / 1024;
};

/** Samples the service's RSS every 50 ms until stopped; gives the peak. */
function sampleRss(): { stop(): number } {
  let peak = rssMiB();
  const t = setInterval(() => {
    peak = Math.max(peak, rssMiB());
  }, 50);
  return {
    stop() {
      clearInterval(t);
      return Math.max(peak, rssMiB());
    },
  };
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

async function getVtep(id: string): Promise<{ connectionState: string; name: string; description: string; connectionError?: string | null }> {
  const r = await svc.call(VTEPS, "GetVtep", { id });
  if (r.err) throw r.err;
  return r.res;
}

const stateIs = (id: string, state: string, ms = 10_000) => waitFor(`VTEP ${id} ${state}`, async () => (await getVtep(id)).connectionState === state, ms);

/** The service's log lines about a device at this port. */
const linesAbout = (port: number) =>
  svc
    .output()
    .split("\n")
    .filter((l) => l.includes(`127.0.0.1:${port}`));

/**
 * Expects a line about the device at this port to match: the service's log lines leave in
 * batches (within 100 ms), so the line may follow the state it explains by that much.
 */
async function expectLogged(port: number, line: RegExp): Promise<void> {
  await waitFor(`a line matching ${line}`, async () => line.test(linesAbout(port).join("\n")), 5_000).catch(() => {});
  expect(linesAbout(port).join("\n")).toMatch(line);
}

/** GETs of one VTEP, one every 20 ms for `ms`: their durations. */
async function getLatencies(id: string, ms: number): Promise<number[]> {
  const out: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const t = performance.now();
    await getVtep(id);
    out.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return out;
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * p)]!;

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

beforeAll(async () => {
  svc = await directService("tunnel", { VNM_VTEP_ALLOWED_NETWORKS: "127.0.0.0/8", VNM_RECLAIM_IDLE_SECONDS: "2" });
  const z = await svc.call("vnm.tunnel.v1.TunnelZoneService", "CreateTunnelZone", { tunnelZone: { name: "devices", type: "vtep" } });
  zoneId = z.res.id;
  good = await fake((s) => s.handshake({ name: "good", description: "well behaved" }));
  goodId = await createVtep(good.port);
  await stateIs(goodId, "connected");
  await new Promise((r) => setTimeout(r, 5_000)); // quiet: the reclaim period passes twice
  idleMiB = rssMiB();
  figures["idle RSS"] = `${idleMiB.toFixed(0)} MiB`;
});

afterEach(async () => {
  // Whatever a device did: the process serves, and the well-behaved VTEP is still connected.
  expect(svc.proc.child.exitCode, svc.output().slice(-2000)).toBeNull();
  const started = performance.now();
  expect(await getVtep(goodId)).toMatchObject({ connectionState: "connected", name: "good", description: "well behaved" });
  expect(performance.now() - started).toBeLessThan(500);
});

afterAll(async () => {
  console.log(`hostile-peer figures: ${Object.entries(figures)
    .map(([k, v]) => `${k}: ${v}`)
    .join("; ")}`);
  for (const f of fakes) await f.close();
  await svc?.stop();
});

describe("a peer's message over a bound ends that session in error, naming the device", () => {
  it("an error reply nested 100,000 deep", async () => {
    const f = await fake(async (s) => {
      const r = await s.next("list_dbs");
      await s.write(`{"id":${JSON.stringify(r.id)},"result":null,"error":${nested(100_000)}}`);
    });
    const id = await createVtep(f.port);
    await stateIs(id, "error");
    await expectLogged(f.port, /nested deeper than 1000/);
    // The VTEP says why, bounded.
    const why = (await getVtep(id)).connectionError ?? "";
    expect(why).toMatch(/^session dropped: .*nested deeper than 1000.* \([a-z_]+\)$/);
    expect(why.length).toBeLessThanOrEqual(1024);
  });

  it("an update whose switch name is nested 20,000 deep, and one whose name is not a string", async () => {
    for (const name of [nested(20_000), '["set",[1,2]]']) {
      const f = await fake(async (s) => {
        await s.handshake({ name: "before" });
        await s.write(`{"id":null,"method":"update","params":["vnm",{"Physical_Switch":{"10000000-0000-4000-8000-000000000001":{"new":{"name":${name}}}}}]}`);
      });
      const id = await createVtep(f.port);
      await stateIs(id, "error");
      await expectLogged(f.port, /VTEP session dropped/);
    }
  });

  it("a 15 MiB list_dbs reply of empty objects costs bounded memory", async () => {
    const rss = sampleRss();
    const f = await fake(async (s) => {
      const r = await s.next("list_dbs");
      await s.write(`{"id":${JSON.stringify(r.id)},"result":[`);
      const block = "{},".repeat(100_000);
      for (let sent = 0; sent < 15 * 1024 * 1024 && !s.socket.destroyed; sent += block.length) await s.write(block);
      await s.write("{}]}");
    });
    const id = await createVtep(f.port);
    await stateIs(id, "error");
    const peak = rss.stop();
    figures["15 MiB reply: peak RSS"] = `${peak.toFixed(0)} MiB (+${(peak - idleMiB).toFixed(0)})`;
    expect(peak - idleMiB).toBeLessThan(200);
    await expectLogged(f.port, /more than 200000 objects and arrays/);
  });
});

describe("a device flooding updates", () => {
  it("costs bounded memory, GETs stay fast, and its newest state is served within seconds", async () => {
    const FLOOD_MS = 10_000;
    // The device's own state: what a (re)connecting monitor is told, and what updates carry.
    let current: SwitchSpec = { name: "flood", description: "gen-0", ports: 500, portPrefix: "g0-" };
    let flooding = true;
    let sent = 0;
    const f = await fake(async (s) => {
      await s.handshake(current);
      for (let gen = 1; flooding && !s.socket.destroyed; gen++) {
        current = { ...current, description: `gen-${gen}`, portPrefix: `g${gen}-` };
        await s.write(JSON.stringify({ id: null, method: "update", params: ["vnm", tablesFor(current)] }));
        sent++;
        // This process measures the GETs too: let their answers in between.
        await new Promise((r) => setImmediate(r));
      }
    });
    // The same GETs for 2 s before the flood, as the machine's own figure to read the flood's beside.
    const quiet = await getLatencies(goodId, 2_000);
    const id = await createVtep(f.port);
    await stateIs(id, "connected");
    const rss = sampleRss();
    const latencies = await getLatencies(id, FLOOD_MS);
    flooding = false;
    const endedAt = Date.now();
    const newest = current.description;
    await waitFor("the newest state", async () => (await getVtep(id)).description === newest, 15_000);
    const toNewest = Date.now() - endedAt;
    const ports = (await svc.call(VTEPS, "ListVtepPorts", { id })).res.items as { name: string }[];
    expect(ports).toHaveLength(500);
    expect(ports.every((p) => p.name.startsWith(current.portPrefix!))).toBe(true);
    const peak = rss.stop();
    const p99 = percentile(latencies, 0.99);
    figures["flood"] =
      `${sent} updates of 500 ports in ${FLOOD_MS / 1000} s; peak RSS ${peak.toFixed(0)} MiB (+${(peak - idleMiB).toFixed(0)}); ` +
      `GET p99 ${p99.toFixed(1)} ms over ${latencies.length} (before the flood: ${percentile(quiet, 0.99).toFixed(1)} ms); newest state served ${toNewest} ms after the flood`;
    expect(sent).toBeGreaterThan(100);
    expect(peak - idleMiB).toBeLessThan(200);
    expect(p99).toBeLessThan(250);
    expect(toNewest).toBeLessThan(5_000);
    // Memory goes back: within 64 MiB of idle within a minute.
    const backAt = Date.now();
    await waitFor("memory back near idle", async () => rssMiB() - idleMiB < 64, 60_000);
    figures["flood: back within 64 MiB of idle after"] = `${Date.now() - backAt} ms (${rssMiB().toFixed(0)} MiB)`;
  });
});

describe("peers that do not play along", () => {
  it("a silent peer is an error, tried again with back-off", async () => {
    const f = await fake(() => {});
    const id = await createVtep(f.port);
    await stateIs(id, "error", 10_000);
    const before = f.sessions.length;
    await new Promise((r) => setTimeout(r, 6_000));
    // Each try waits 3 s for an answer, then backs off: at most a few sessions in 6 s.
    expect(f.sessions.length - before).toBeLessThanOrEqual(3);
    await expectLogged(f.port, /no answer to list_dbs/);
    expect((await getVtep(id)).connectionError).toMatch(/^session dropped: .*no answer to list_dbs.*\(no_answer\)$/);
  });

  it("garbage is an error", async () => {
    const f = await fake(async (s) => {
      await s.write("SSH-2.0-OpenSSH_9.2\r\n\u0000\u00ff{{{");
    });
    const id = await createVtep(f.port);
    await stateIs(id, "error");
    await expectLogged(f.port, /not a JSON object or array/);
    expect((await getVtep(id)).connectionError).toMatch(/^session dropped: not a JSON object or array/);
  });

  it("a peer that stops reading while it asks for echoes is dropped before it costs memory", async () => {
    const rss = sampleRss();
    const f = await fake(async (s) => {
      await s.handshake({ name: "deaf" });
      s.socket.pause();
      const big = "x".repeat(256 * 1024);
      for (let i = 0; i < 400 && !s.socket.destroyed; i++) await s.write(JSON.stringify({ id: `e${i}`, method: "echo", params: [big] }));
    });
    const id = await createVtep(f.port);
    await stateIs(id, "error", 15_000);
    const peak = rss.stop();
    figures["a peer that does not read: peak RSS"] = `${peak.toFixed(0)} MiB (+${(peak - idleMiB).toFixed(0)})`;
    expect(peak - idleMiB).toBeLessThan(200);
    await expectLogged(f.port, /unread/);
  });

  it("closing mid-message, again and again, is met with back-off, not a reconnect storm", async () => {
    const f = await fake(async (s) => {
      await s.handshake({ name: "flaky" });
      await s.write('{"id":null,"method":"update","params":["vnm",{"Physical_Sw');
      s.socket.destroy();
    });
    const id = await createVtep(f.port);
    await waitFor("a few sessions", async () => f.sessions.length >= 2, 10_000);
    const start = f.sessions.length;
    await new Promise((r) => setTimeout(r, 8_000));
    figures["reconnects in 8 s of a peer closing mid-message"] = String(f.sessions.length - start);
    expect(f.sessions.length - start).toBeLessThanOrEqual(8);
    // Each attempt is "connected" from its handshake to the peer's close, a moment: a single read
    // can land in it (CI saw it once). What must not be is a VTEP that stays connected.
    await waitFor(`VTEP ${id} not connected`, async () => (await getVtep(id)).connectionState !== "connected", 1_000);
  });
});
