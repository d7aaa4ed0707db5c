// The events' writer (events.ts): however many events wait to be made, the event loop gets a
// turn in between; and what waits in a stream leaves in one write per turn.
import { expect, it } from "vitest";
import { writer } from "./events.ts";

const spin = (us: number) => {
  const until = performance.now() + us / 1000;
  while (performance.now() < until);
};

it("lets the event loop turn while 40 streams make 20,000 events, and writes each stream's waiting events at once", async () => {
  const events = writer(2, 0.5);
  const writes: number[] = [];
  const queued = new Map<number, number>();
  const made = { n: 0 };
  const streams = Array.from({ length: 40 }, (_, i) => {
    const pending = {
      flush() {
        writes.push(queued.get(i) ?? 0);
        queued.set(i, 0);
        return true;
      },
    };
    return async () => {
      for (let k = 0; k < 500; k++) {
        await events.admit();
        spin(10);
        made.n++;
        queued.set(i, (queued.get(i) ?? 0) + 1);
        events.ready(pending);
      }
    };
  });
  // A callback of the loop's next turn: it runs while events are still being made.
  let atTurn = -1;
  setImmediate(() => {
    atTurn = made.n;
  });
  await Promise.all(streams.map((s) => s()));
  await new Promise((r) => setTimeout(r, 20));
  expect(made.n).toBe(20_000);
  expect(atTurn).toBeGreaterThan(0);
  expect(atTurn).toBeLessThan(1_000);
  // Every event written, in far fewer writes than events.
  expect(writes.reduce((a, b) => a + b, 0)).toBe(20_000);
  expect(writes.filter((n) => n > 0).length).toBeLessThan(20_000 / 2);
});
