// The in-process bus (one process, no NATS): a feed's event ids never go back, restarts included.
import { expect, it } from "vitest";
import { localBus } from "./bus.ts";

it("numbers events so that a restarted bus goes on above the ids it gave before", async () => {
  const prefix = "busspec";
  const before = localBus(prefix);
  await before.publish(`${prefix}.bridge.Bridge.created`, { id: "a" }, "1");
  const last = await before.lastSeq();
  await before.close();
  await new Promise((r) => setTimeout(r, 5));
  // A client resuming after `last` on the new bus gets what the new bus publishes, not nothing.
  const after = localBus(prefix);
  const seen: number[] = [];
  const stop = await after.follow(last, (seq) => {
    seen.push(seq);
  });
  await after.publish(`${prefix}.bridge.Bridge.created`, { id: "b" }, "2");
  stop();
  expect(seen).toHaveLength(1);
  expect(seen[0]).toBeGreaterThan(last);
  expect(await after.lastSeq()).toBe(seen[0]);
  expect(Number.isSafeInteger(seen[0])).toBe(true);
  await after.close();
});
