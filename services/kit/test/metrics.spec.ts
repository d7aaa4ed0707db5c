// What keeping Node's metrics costs a process that does nothing, measured in a child process
// from /proc: its main thread's wake-ups. And the event-loop delay they report still shows a stall.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Metrics as M } from "../src/metrics.ts";

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

describe("Metrics.text with other parts included", () => {
  it("serves each family once, every part's samples under their own part label, none added up", async () => {
    const gateway = new M("gateway");
    const bridge = new M("bridge");
    const qos = new M("qos");
    gateway.include(bridge);
    gateway.include(qos);
    gateway.grpcClient.labels({ service: "vnm.bridge.v1.BridgeService", method: "ListBridges", code: "OK" }).inc();
    bridge.grpcServer.labels({ method: "vnm.bridge.v1.BridgeService/ListBridges", code: "OK" }).inc(2);
    qos.grpcServer.labels({ method: "vnm.bridge.v1.BridgeService/ListBridges", code: "OK" }).inc(3);
    bridge.grpcServerDuration.labels({ method: "m" }).observe(0.002);
    const text = await gateway.text();
    const types = text.split("\n").filter((l) => l.startsWith("# TYPE "));
    expect(new Set(types).size).toBe(types.length);
    expect(types).toContain("# TYPE vnm_grpc_server_calls_total counter");
    const served = text.split("\n").filter((l) => l.startsWith("vnm_grpc_server_calls_total{"));
    expect(served.find((l) => l.includes('part="bridge"'))).toMatch(/ 2$/);
    expect(served.find((l) => l.includes('part="qos"'))).toMatch(/ 3$/);
    expect(text).toMatch(/^vnm_grpc_client_calls_total\{.*part="gateway".*\} 1$/m);
    expect(text).toMatch(/^vnm_grpc_server_call_duration_seconds_bucket\{.*le="0.0025".*part="bridge".*\} 1$|^vnm_grpc_server_call_duration_seconds_bucket\{.*part="bridge".*le="0.0025".*\} 1$/m);
    // Alone, a part serves its own registry only.
    expect(await bridge.text()).not.toContain('part="gateway"');
  });
});
