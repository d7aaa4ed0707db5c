// A NATS outage delays change notifications, never loses them, and never fails a write
// (architecture principle 4). The stack runs on a NATS server of its own, killed and
// restarted here.
import { mkdtempSync, rmSync } from "node:fs";
import { connect as tcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ChangeSeen, freePort, httpClient, type Proc, Stack, startProcess, waitFor } from "../harness/harness.ts";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const store = mkdtempSync(join(tmpdir(), "vnm-nats-"));
let port = 0;
let nats: Proc;

/** Starts the test's NATS server and waits until it accepts connections (retrying a failed start). */
async function startNats(): Promise<Proc> {
  for (let attempt = 1; ; attempt++) {
    const proc = startProcess("/usr/sbin/nats-server", {}, [], ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store]);
    try {
      await waitFor(`nats-server on ${port}`, () => accepting(port), 5_000);
      return proc;
    } catch (err) {
      await proc.stop("SIGKILL");
      if (attempt === 3) throw new Error(`${(err as Error).message}: ${proc.output.join("")}`);
    }
  }
}

function accepting(p: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcp(p, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

beforeAll(async () => {
  port = await freePort();
  nats = await startNats();
  stack.natsUrl = `nats://127.0.0.1:${port}`;
  await stack.startServices();
  gw = await stack.startGateway();
});

afterAll(async () => {
  await stack.stop();
  await nats.stop();
  rmSync(store, { recursive: true, force: true });
});

it("writes succeed while NATS is down, and every change is published once it is back", { timeout: 120_000 }, async () => {
  const seen = await stack.watchChanges();
  const before = await http("POST", "/bridges", { name: "before" });
  await waitFor("the first event", async () => seen.some((e) => e.data["id"] === before.json.id), 10_000);

  await nats.stop("SIGKILL");
  await waitFor("the bus to be reported down", async () => (await http("GET", "/readyz")).json.checks.bus === "unavailable", 15_000);
  // Still ready: the gateway serves without NATS (the outbox holds the changes), and says so.
  const ready = await http("GET", "/readyz");
  expect(ready.status).toBe(200);
  expect(ready.json).toMatchObject({ status: "degraded", degraded: ["bus"] });
  const during: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await http("POST", "/bridges", { name: `during-${i}`, tenantId: "outage" });
    expect(r.status).toBe(201);
    during.push(r.json.id);
  }
  // Reads stay right while the change feed is gone (the cache steps aside).
  expect((await http("GET", "/bridges?tenant_id=outage")).json.map((b: { id: string }) => b.id)).toEqual(during);

  nats = await startNats();
  // Read from the stream itself: the test's own subscriber reconnects too, and would miss what
  // the services publish before it is back.
  let stored: ChangeSeen[] = [];
  await waitFor(
    "the missed changes",
    async () => {
      stored = await stack.storedChanges();
      return during.every((id) => stored.some((e) => e.data["id"] === id && e.subject.endsWith(".created")));
    },
    30_000,
  );
  for (const id of during) expect(stored.filter((e) => e.data["id"] === id)).toHaveLength(1);
  await waitFor("the bus to be reported up", async () => (await http("GET", "/readyz")).json.status === "ok", 15_000);
  expect((await http("GET", "/readyz")).json.checks.bus).toBe("ok");
});
