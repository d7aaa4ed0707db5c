// What keeping Node's metrics costs a process that does nothing, measured in a child process
// from /proc: its main thread's wake-ups. And the event-loop delay they report still shows a stall.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const fixture = join(import.meta.dirname, "fixtures", "idle-wakeups.mjs");
const metrics = join(import.meta.dirname, "..", "src", "metrics.ts");

describe("Metrics", () => {
  it("lets an idle process sleep, and still reports a stalled event loop", () => {
    const r = JSON.parse(execFileSync(process.execPath, [fixture, metrics], { encoding: "utf8" })) as { wakeups: number; lagMax: number };
    // Sampling the delay every 10 ms (prom-client's default) woke the thread ~200 times in 2 s;
    // every 100 ms, ~20.
    expect(r.wakeups).toBeLessThan(80);
    expect(r.lagMax).toBeGreaterThan(0.2);
  });
});
