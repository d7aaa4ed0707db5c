// Prometheus metrics (prom-client), one registry per process part: a gateway and each service
// keep their own, so several run in one process without clashing. The families every part
// may fill: HTTP requests by route template, gRPC calls on both sides by method and code, the
// outbox's backlog and age, NATS publish failures, cache hits, misses and errors, open event
// streams, the Postgres pool, and Node's own (memory, event-loop lag).
import { createServer, type Server } from "node:http";
import type pg from "pg";
import { AggregatorRegistry, Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** How often the event-loop delay is sampled (ms). */
const LAG_SAMPLE_MS = 100;

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({ name: "vnm_http_requests_total", help: "HTTP requests by route template, method and status", labelNames: ["route", "method", "status"], registers: [this.registry] });
  readonly httpDuration = new Histogram({ name: "vnm_http_request_duration_seconds", help: "HTTP request latency", labelNames: ["route", "method"], buckets: SECONDS, registers: [this.registry] });
  readonly grpcServer = new Counter({ name: "vnm_grpc_server_calls_total", help: "gRPC calls served, by method and code", labelNames: ["method", "code"], registers: [this.registry] });
  readonly grpcServerDuration = new Histogram({ name: "vnm_grpc_server_call_duration_seconds", help: "gRPC call latency on the server", labelNames: ["method"], buckets: SECONDS, registers: [this.registry] });
  readonly grpcClient = new Counter({ name: "vnm_grpc_client_calls_total", help: "gRPC calls made, by service, method and code", labelNames: ["service", "method", "code"], registers: [this.registry] });
  readonly grpcClientDuration = new Histogram({ name: "vnm_grpc_client_call_duration_seconds", help: "gRPC call latency seen by the caller", labelNames: ["service", "method"], buckets: SECONDS, registers: [this.registry] });
  readonly cacheHits = new Counter({ name: "vnm_cache_hits_total", help: "Collection reads answered from the cache", registers: [this.registry] });
  readonly cacheMisses = new Counter({ name: "vnm_cache_misses_total", help: "Collection reads the cache did not hold", registers: [this.registry] });
  readonly cacheErrors = new Counter({ name: "vnm_cache_errors_total", help: "Cache operations that failed (the cache is bypassed until reset)", registers: [this.registry] });
  readonly eventStreams = new Gauge({ name: "vnm_event_streams_open", help: "Open /events streams", registers: [this.registry] });
  readonly publishFailures = new Counter({ name: "vnm_nats_publish_failures_total", help: "Change notifications NATS did not take (retried from the outbox)", registers: [this.registry] });

  /** Other parts of this process whose metrics this part's /metrics serves too (include). */
  private readonly others: Metrics[] = [];

  constructor(part: string) {
    this.registry.setDefaultLabels({ part });
    // Event-loop delay sampled every 100 ms, not prom-client's 10: its timer woke every process
    // 100 times a second, ~0.9% of a core each while idle. A stall of 100 ms or more is still
    // seen whole; shorter ones in part.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: LAG_SAMPLE_MS });
  }

  /** The outbox's backlog and the age of its oldest change, read at each scrape. */
  watchOutbox(pool: pg.Pool): void {
    const read = async () => (await pool.query<{ n: string; age: number | null }>("SELECT count(*) AS n, extract(epoch FROM now() - min(created_at)) AS age FROM outbox")).rows[0];
    new Gauge({
      name: "vnm_outbox_backlog",
      help: "Changes written but not yet published",
      registers: [this.registry],
      async collect() {
        this.set(Number((await read().catch(() => undefined))?.n ?? 0));
      },
    });
    new Gauge({
      name: "vnm_outbox_oldest_age_seconds",
      help: "Age of the oldest change not yet published",
      registers: [this.registry],
      async collect() {
        this.set(Number((await read().catch(() => undefined))?.age ?? 0));
      },
    });
  }

  /** The Postgres pool's connections: total, idle and waiting clients. */
  watchPool(pool: pg.Pool): void {
    new Gauge({
      name: "vnm_pg_pool_connections",
      help: "Postgres pool connections by state",
      labelNames: ["state"],
      registers: [this.registry],
      collect() {
        this.set({ state: "total" }, pool.totalCount);
        this.set({ state: "idle" }, pool.idleCount);
        this.set({ state: "waiting" }, pool.waitingCount);
      },
    });
  }

  /**
   * Serves another part's metrics with this part's own: the gateway's /metrics, when every
   * service runs in its process (npm start), carries every part's families.
   */
  include(other: Metrics): void {
    this.others.push(other);
  }

  /**
   * The Prometheus text of this part and the parts it includes: each family once, with every
   * part's samples, told apart by their \`part\` label (the part's name). Nothing is added up:
   * no two parts' samples share their labels.
   */
  async text(): Promise<string> {
    if (this.others.length === 0) return this.registry.metrics();
    const all = await Promise.all([this, ...this.others].map((m) => m.registry.getMetricsAsJSON()));
    // prom-client's cluster aggregation merges families by name; "sum" over samples whose labels
    // all differ keeps each as it is (its defaults would keep one part's process metrics only).
    for (const families of all) for (const f of families) (f as { aggregator: string }).aggregator = "sum";
    return AggregatorRegistry.aggregate(all).metrics();
  }

  /** Serves the registry at /metrics on `port` (a service's own metrics port). */
  serve(port: number, host: string): Promise<Server> {
    const server = createServer((req, res) => {
      if (req.url !== "/metrics") {
        res.writeHead(404).end();
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { "Content-Type": this.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    });
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve(server));
    });
  }
}
