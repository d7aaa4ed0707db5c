// What keeping Node's metrics costs a process that does nothing, measured in a child process
// from /proc: its main thread's wake-ups. And the event-loop delay they report still shows a stall.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LocalCounter, LocalHistogram, Metrics as M } from "../src/metrics.ts";

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

describe("the families counted locally", () => {
  const bounds = [0.001, 0.01, 0.1, 1];
  /** The same observations into prom-client's own families and into ours, each in a registry of its own. */
  async function both(feed: (c: { inc(l: Record<string, string>, n?: number): void }, h: { observe(l: Record<string, string>, v: number): void }) => void) {
    const theirs = new Registry();
    theirs.setDefaultLabels({ part: "p" });
    const c1 = new Counter({ name: "x_total", help: "calls", labelNames: ["method", "code"], registers: [theirs] });
    const h1 = new Histogram({ name: "x_seconds", help: "latency", labelNames: ["method"], buckets: bounds, registers: [theirs] });
    feed({ inc: (l, n) => c1.labels(l).inc(n) }, { observe: (l, v) => h1.labels(l).observe(v) });
    const ours = new Registry();
    ours.setDefaultLabels({ part: "p" });
    const c2 = new LocalCounter("x_total", "calls", ["method", "code"], ours);
    const h2 = new LocalHistogram("x_seconds", "latency", ["method"], bounds, ours);
    feed({ inc: (l, n) => c2.labels(l).inc(n) }, { observe: (l, v) => h2.labels(l).observe(v) });
    return { theirs, ours, c2, h2 };
  }

  it("expose exactly what prom-client's own counter and histogram expose for the same observations", async () => {
    const { theirs, ours } = await both((c, h) => {
      c.inc({ method: "Get", code: "OK" });
      c.inc({ method: "Get", code: "OK" }, 2);
      c.inc({ method: "Get", code: "NOT_FOUND" });
      for (const v of [0.0005, 0.001, 0.002, 0.05, 0.5, 3]) h.observe({ method: "Get" }, v);
      h.observe({ method: "List" }, 0.02);
    });
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // The JSON the aggregation across parts reads: the same but for prom-client's empty exemplars.
    const noExemplars = (families: { values: object[] }[]) => families.map((f) => ({ ...f, values: f.values.map(({ exemplar: _, ...v }: { exemplar?: unknown }) => v) }));
    expect(noExemplars(await ours.getMetricsAsJSON())).toEqual(noExemplars(await theirs.getMetricsAsJSON()));
    expect(await ours.metrics()).toContain('x_seconds_bucket{le="0.001",part="p",method="Get"} 2');
  });

  it("show a family without labels at 0 before anything is counted, as prom-client does", async () => {
    const theirs = new Registry();
    new Counter({ name: "z_total", help: "z", registers: [theirs] });
    const ours = new Registry();
    new LocalCounter("z_total", "z", [], ours);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain("z_total 0");
  });

  it("keep a series its caller holds through a reset, from zero", async () => {
    const { ours, c2, h2 } = await both(() => {});
    const get = c2.labels({ method: "Get", code: "OK" });
    const timing = h2.labels({ method: "Get" });
    get.inc(5);
    timing.observe(0.5);
    ours.resetMetrics();
    get.inc();
    timing.observe(0.005);
    const text = await ours.metrics();
    expect(text).toContain('x_total{method="Get",code="OK",part="p"} 1');
    expect(text).toContain('x_seconds_count{part="p",method="Get"} 1');
    expect(text).toContain('x_seconds_bucket{le="0.01",part="p",method="Get"} 1');
  });

  it("keep label values apart whatever they hold", () => {
    const c = new LocalCounter("w_total", "w", ["a", "b"], new Registry());
    // Values joined by a separator that a value may hold would make these one series.
    c.labels({ a: "x\u0000", b: "y" }).inc();
    expect(c.labels({ a: "x", b: "\u0000y" }).value).toBe(0);
    expect(c.labels({ a: "x:1", b: "y" }).value).toBe(0);
    expect(c.labels({ a: "x", b: "1:y" }).value).toBe(0);
    expect(c.labels({ a: "x\u0000", b: "y" }).value).toBe(1);
  });

  it("refuse what prom-client refuses: a missing or unknown label, a count going down, a value that is no number", () => {
    const { c2, h2 } = { c2: new LocalCounter("y_total", "y", ["method"], new Registry()), h2: new LocalHistogram("y_seconds", "y", ["method"], bounds, new Registry()) };
    expect(() => c2.labels({})).toThrow(/label method/);
    expect(() => c2.labels({ method: "m", other: "o" })).toThrow(/no label other/);
    expect(() => c2.labels({ method: "m" }).inc(-1)).toThrow();
    expect(() => h2.labels({ method: "m" }).observe(Number.NaN)).toThrow();
  });
});
