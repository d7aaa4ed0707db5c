// The in-process bus (one process, no NATS): a feed's event ids never go back, restarts
// included, and the bus says which ids a feed can resume after.
import { expect, it } from "vitest";
import { localBus } from "./bus.ts";

it("numbers events above the ids it gave before a restart, and keeps none of those", async () => {
  const prefix = "busspec";
  const before = localBus(prefix);
  await before.publish(`${prefix}.bridge.Bridge.created`, { id: "a" }, "1");
  const { last } = await before.kept();
  expect(await before.kept()).toEqual({ first: last, last });
  await before.close();
  await new Promise((r) => setTimeout(r, 5));
  const after = localBus(prefix);
  // Nothing kept yet: a feed may resume after the newest id only (none from before the restart).
  const empty = await after.kept();
  expect(empty.first - 1).toBe(empty.last);
  expect(empty.last).toBeGreaterThan(last);
  const seen: number[] = [];
  const stop = await after.follow(empty.last, (seq) => {
    seen.push(seq);
  });
  await after.publish(`${prefix}.bridge.Bridge.created`, { id: "b" }, "2");
  stop();
  expect(seen).toEqual([empty.last + 1]);
  expect(await after.kept()).toEqual({ first: empty.last + 1, last: empty.last + 1 });
  expect(Number.isSafeInteger(seen[0])).toBe(true);
  await after.close();
});

it("keeps the last 1,000 events: an older id can no longer be resumed after", async () => {
  const bus = localBus("busspec-window");
  const { last: start } = await bus.kept();
  for (let i = 0; i < 1_005; i++) await bus.publish("busspec-window.bridge.Bridge.created", { i }, String(i));
  expect(await bus.kept()).toEqual({ first: start + 6, last: start + 1_005 });
  await bus.close();
});
