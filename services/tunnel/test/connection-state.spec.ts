// A VTEP's writes are limited to one per interval while its device keeps changing (sessions.ts),
// but a session lost or found again is stored at once: a bind is refused while its VTEP reads
// disconnected, so the VTEP must not read disconnected long after its device is back, nor
// connected long after it went. The tunnel service is a real process on the machine's Postgres;
// the device is a fake VTEP on loopback; the write interval is 20 s, so a state that waited for
// it could not be seen within the 5 s the test allows.
import { type DirectService, directService, waitFor } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeVtep } from "./fake-vtep.ts";

const VTEPS = "vnm.tunnel.v1.VtepService";
const INTERVAL_MS = 20_000;
const SEEN_WITHIN_MS = 5_000;
let svc: DirectService;
let fake: FakeVtep | undefined;

beforeAll(async () => {
  svc = await directService("tunnel", { VNM_VTEP_ALLOWED_NETWORKS: "127.0.0.0/8", VNM_VTEP_WRITE_INTERVAL_MS: String(INTERVAL_MS) });
});

afterAll(async () => {
  await fake?.close();
  await svc?.stop();
});

it("a device that spent its writes on port changes is seen going and coming back at once", async () => {
  const chat = Promise.withResolvers<void>();
  const drop = Promise.withResolvers<void>();
  const back = Promise.withResolvers<void>();
  const PORT_UUID = "00000000-0000-4000-8000-000000000000";
  const CHANGES = 5;
  let sessions = 0;
  fake = await FakeVtep.start(async (s) => {
    if (++sessions === 1) {
      await s.handshake({ name: "sw", ports: 2 });
      await chat.promise;
      for (let i = 1; i <= CHANGES; i++) {
        await s.write(JSON.stringify({ id: null, method: "update", params: ["vnm", { Physical_Port: { [PORT_UUID]: { new: { name: "eth0", description: `change ${i}` } } } }] }));
        await new Promise((r) => setTimeout(r, 100));
      }
      await drop.promise;
      s.socket.destroy();
      return;
    }
    // The device is back only when the test says so: until then the service's new session waits for its list_dbs answer.
    await back.promise;
    await s.handshake({ name: "sw", ports: 2 });
  });
  const zone = await svc.call("vnm.tunnel.v1.TunnelZoneService", "CreateTunnelZone", { tunnelZone: { name: "devices", type: "vtep" } });
  const made = await svc.call(VTEPS, "CreateVtep", { vtep: { managementIp: "127.0.0.1", managementPort: fake.port, tunnelZoneId: zone.res.id } });
  expect(made.err).toBeNull();
  const id = made.res.id as string;
  const state = async () => ((await svc.call(VTEPS, "GetVtep", { id })).res as { connectionState: string }).connectionState;
  const descriptions = async () => (((await svc.call(VTEPS, "ListVtepPorts", { id })).res.items ?? []) as { name: string; description: string }[]).map((p) => p.description);
  await waitFor("the device connected, its ports stored", async () => (await state()) === "connected" && (await descriptions()).length === 2, 15_000);

  // The port changes spend the write burst: the first is stored, the newest waits for the interval.
  chat.resolve();
  await waitFor("the first change stored", async () => (await descriptions()).includes("change 1"), SEEN_WITHIN_MS);
  await new Promise((r) => setTimeout(r, CHANGES * 100 + 500));
  expect(await descriptions()).not.toContain(`change ${CHANGES}`);

  // The session is lost: stored at once, though the writer was waiting for the interval.
  drop.resolve();
  await waitFor("the VTEP reads disconnected", async () => (await state()) === "disconnected", SEEN_WITHIN_MS);
  expect(await descriptions()).toEqual([]);

  // The device answers again: connected at once, with its ports.
  back.resolve();
  await waitFor("the VTEP reads connected again", async () => (await state()) === "connected", SEEN_WITHIN_MS);
  await waitFor("its ports stored again", async () => (await descriptions()).length === 2, SEEN_WITHIN_MS);
}, 60_000);
