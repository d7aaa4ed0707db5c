// Prometheus metrics (prom-client) on the gateway and on each service's metrics port: every
// family present, and moving after traffic.
import { describe, expect, it } from "vitest";
import { httpClient, openFeed, useStack, waitFor } from "@vnm/e2e/harness";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);

/** The value of a sample (name and labels as written), or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

const scrape = async (url: string) => (await fetch(url)).text();

describe("metrics", () => {
  it("the gateway counts requests by route template, its gRPC calls, cache hits and misses, and open streams", async () => {
    const feed = await openFeed(fx.gw, fx.stack.adminToken);
    const b = (await http("POST", "/bridges", { name: "m" })).json;
    // The creation's change notification empties the cache again when it reaches this gateway;
    // a list read before that could not be kept, so the reads below wait for it.
    await waitFor("the creation on /events", async () => feed.events.some((e) => e.data.id === b.id), 10_000);
    await http("GET", b.uri);
    await http("GET", "/bridges");
    await http("GET", "/bridges");
    const text = await scrape(`${fx.gw}/metrics`);
    expect(sample(text, "vnm_http_requests_total", { route: "/bridges/{id}", method: "GET", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_http_request_duration_seconds_count", { route: "/bridges", method: "POST" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_grpc_client_calls_total", { service: "vnm.bridge.v1.BridgeService", method: "CreateBridge", code: "OK" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_cache_hits_total")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_cache_misses_total")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_cache_errors_total")).toBe(0);
    expect(sample(text, "vnm_event_streams_open")).toBe(1);
    expect(sample(text, "nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    // A path that names nothing is counted under a fixed name, not as itself.
    await http("GET", "/no/such/path/abc");
    expect(await scrape(`${fx.gw}/metrics`)).toContain('route="unmatched"');
    await feed.close();
    await waitFor("the stream closed", async () => sample(await scrape(`${fx.gw}/metrics`), "vnm_event_streams_open") === 0, 5_000);
  });

  it("a service counts the calls it serves, its outbox and its pool on its own metrics port", async () => {
    await http("POST", "/bridges", { name: "n" });
    const text = await scrape(`http://${fx.stack.metricsAddrs.get("bridge")}/metrics`);
    expect(sample(text, "vnm_grpc_server_calls_total", { method: "vnm.bridge.v1.BridgeService/CreateBridge", code: "OK" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_grpc_server_call_duration_seconds_count", { method: "vnm.bridge.v1.BridgeService/CreateBridge" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_outbox_backlog")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "vnm_outbox_oldest_age_seconds")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "vnm_pg_pool_connections", { state: "total" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "vnm_nats_publish_failures_total")).toBe(0);
    expect(text).toContain('part="bridge"');
  });
});
