// A VTEP session in this process, against a fake device on loopback: an exception nobody
// foresaw, thrown while the device's input is handled, ends that session and never the process.
import type { Logger } from "@vnm/kit";
import { waitFor } from "@vnm/kit/testing";
import { afterEach, expect, it } from "vitest";
import { DeviceSession } from "../src/device.ts";
import type { PeerFault } from "../src/ovsdb.ts";
import { FakeVtep, tablesFor } from "./fake-vtep.ts";

const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
const logger = (base: Record<string, unknown> = {}): Logger => {
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push({ level, msg, fields: { ...base, ...fields } });
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: (f) => logger({ ...base, ...f }) };
};

let session: DeviceSession | undefined;
let device: FakeVtep | undefined;
afterEach(async () => {
  session?.stop();
  await device?.close();
  lines.length = 0;
});

it("a failure while a state is reported drops the session with a log line, and the next one connects", async () => {
  device = await FakeVtep.start((s) => s.handshake({ name: "sw" }));
  const faults: PeerFault[] = [];
  let calls = 0;
  const s = new DeviceSession(
    { id: "v1", ip: "127.0.0.1", port: device.port },
    {
      changed: () => {
        if (++calls === 1 && session?.connectionState === "connected") throw new TypeError("a bug nobody foresaw");
      },
      fault: (r) => faults.push(r),
    },
    logger(),
  );
  session = s;
  s.start();
  await waitFor("connected after the failure", async () => device!.sessions.length >= 2 && s.state().connectionState === "connected", 10_000);
  expect(faults).toEqual(["internal"]);
  const line = lines.find((l) => l.level === "error");
  expect(line?.msg).toMatch(/unexpectedly/);
  expect(line?.fields).toMatchObject({ vtep: "v1", device: `127.0.0.1:${device.port}` });
});

it("a failure while an update is handled ends that session in error, then it is tried again", async () => {
  device = await FakeVtep.start(async (s) => {
    await s.handshake({ name: "sw" });
    await s.write(JSON.stringify({ id: null, method: "update", params: ["vnm", tablesFor({ name: "sw2" })] }));
  });
  const states: string[] = [];
  let updates = 0;
  const s = new DeviceSession(
    { id: "v2", ip: "127.0.0.1", port: device.port },
    {
      changed: () => {
        states.push(session!.state().connectionState);
        if (session!.state().name === "sw2" && ++updates === 1) throw new RangeError("unforeseen");
      },
    },
    logger(),
  );
  session = s;
  s.start();
  await waitFor("tried again and connected", async () => device!.sessions.length >= 2 && s.state().name === "sw2", 10_000);
  expect(states).toContain("error");
  expect(lines.some((l) => l.level === "warn" && /handling the peer's input failed: unforeseen/.test(l.msg))).toBe(true);
});
