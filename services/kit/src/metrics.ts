// Prometheus metrics (prom-client), one registry per process part: a gateway and each service
// keep their own, so several run in one process without clashing. The families every part
// may fill: HTTP requests by route template, gRPC calls on both sides by method and code, the
// outbox's backlog and age, NATS publish failures, cache hits, misses and errors, open event
// streams and the messages they dropped, the Postgres pool, and Node's own (memory, event-loop lag).
import { createServer, type Server } from "node:http";
import type pg from "pg";
import { AggregatorRegistry, collectDefaultMetrics, Gauge, type Metric, Registry } from "prom-client";

/** How often the event-loop delay is sampled (ms). */
const LAG_SAMPLE_MS = 100;

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Labels = Record<string, string>;

/** One sample of a family as prom-client's Registry reads it from `get()` (its own families give the same). */
interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
  /** A histogram series' own labels, apart from `le` (so the text puts default labels between, as prom-client's own do). */
  sharedLabels?: Labels;
}

/**
 * A labelled family counted in plain numbers on the hot path and read by prom-client's Registry
 * only when scraped (`get()`, the shape its own families give, so the text, default labels and
 * the aggregation across parts are prom-client's). A series is found by its labels once and kept
 * by the caller; counting is then an addition. prom-client's own children check and hash their
 * labels and allocate on every inc and observe: a gateway's cache hit took 7 us more CPU with them
 * (of 48 in all). Nothing about the exposition changes: names, labels and buckets are the same.
 */
abstract class LocalFamily<S extends { zero(): void }> {
  readonly aggregator = "sum";
  abstract readonly type: "counter" | "histogram";
  private readonly series = new Map<string, { labels: Labels; series: S }>();
  /** The family's one series when it has no labels. */
  private unlabelled?: S;

  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];

  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these labels (every one of the family's label names; made on first use). */
  labels(labels: Labels): S {
    if (this.labelNames.length === 0) return this.one();
    let key = "";
    for (const name of this.labelNames) {
      const v = labels[name];
      if (typeof v !== "string") throw new Error(`${this.name}: label ${name} is missing`);
      // Each value after its length: no two sets of values make the same key.
      key += `${v.length}:${v}`;
    }
    let entry = this.series.get(key);
    if (!entry) {
      for (const name of Object.keys(labels)) if (!this.labelNames.includes(name)) throw new Error(`${this.name}: no label ${name}`);
      entry = { labels: { ...labels }, series: this.fresh() };
      this.series.set(key, entry);
    }
    return entry.series;
  }

  /** Every series and its labels, for `get()`. */
  protected all(): { labels: Labels; series: S }[] {
    const out = [...this.series.values()];
    // A family without labels shows its one series from the start (at 0), as prom-client's do.
    if (this.labelNames.length === 0) out.push({ labels: {}, series: this.one() });
    return out;
  }

  private one(): S {
    this.unlabelled ??= this.fresh();
    return this.unlabelled;
  }

  /** Zeroes every series in place (the callers keep theirs). */
  reset(): void {
    for (const { series } of this.all()) series.zero();
  }

  protected abstract fresh(): S;
  protected abstract samples(labels: Labels, series: S): Sample[];

  /** The samples for the text exposition. */
  getForPromString(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.all().flatMap(({ labels, series }) => this.samples(labels, series)) };
  }

  /** The samples for JSON (and the aggregation across parts): each with all its labels. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const family = this.getForPromString();
    family.values = family.values.map(({ sharedLabels, ...v }) => (sharedLabels ? { ...v, labels: { ...v.labels, ...sharedLabels } } : v));
    return family;
  }
}

export class CounterSeries {
  value = 0;
  inc(n = 1): void {
    if (!(n >= 0)) throw new Error(`a counter only goes up (${n})`);
    this.value += n;
  }
  zero(): void {
    this.value = 0;
  }
}

export class LocalCounter extends LocalFamily<CounterSeries> {
  readonly type = "counter";
  protected fresh(): CounterSeries {
    return new CounterSeries();
  }
  protected samples(labels: Labels, s: CounterSeries): Sample[] {
    return [{ labels, value: s.value }];
  }
  /** Adds `n` to the series of `labels` (or the family's one series, unlabelled). */
  inc(labelsOrN?: Labels | number, n?: number): void {
    if (typeof labelsOrN === "object") this.labels(labelsOrN).inc(n);
    else this.labels({}).inc(labelsOrN);
  }
}

export class HistogramSeries {
  /** Observations per bucket (not cumulative), the last one above every bound. */
  readonly counts: Float64Array;
  readonly bounds: readonly number[];
  sum = 0;
  count = 0;
  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(value: number): void {
    if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
  /** Observes the seconds until the returned function is called, and gives them. */
  startTimer(): () => number {
    const started = performance.now();
    return () => {
      const seconds = (performance.now() - started) / 1000;
      this.observe(seconds);
      return seconds;
    };
  }
  zero(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

export class LocalHistogram extends LocalFamily<HistogramSeries> {
  readonly type = "histogram";
  private readonly bounds: readonly number[];
  constructor(name: string, help: string, labelNames: readonly string[], bounds: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
    this.bounds = bounds;
  }
  protected fresh(): HistogramSeries {
    return new HistogramSeries(this.bounds);
  }
  protected samples(labels: Labels, s: HistogramSeries): Sample[] {
    const bucket = `${this.name}_bucket`;
    let acc = 0;
    const out: Sample[] = this.bounds.map((le, i) => {
      acc += s.counts[i]!;
      return { labels: { le }, value: acc, metricName: bucket, sharedLabels: labels };
    });
    out.push(
      { labels: { le: "+Inf" }, value: s.count, metricName: bucket, sharedLabels: labels },
      { labels: {}, value: s.sum, metricName: `${this.name}_sum`, sharedLabels: labels },
      { labels: {}, value: s.count, metricName: `${this.name}_count`, sharedLabels: labels },
    );
    return out;
  }
  /** Starts timing a call of the series of `labels`. */
  startTimer(labels: Labels): () => number {
    return this.labels(labels).startTimer();
  }
}

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new LocalCounter("vnm_http_requests_total", "HTTP requests by route template, method and status", ["route", "method", "status"], this.registry);
  readonly httpDuration = new LocalHistogram("vnm_http_request_duration_seconds", "HTTP request latency", ["route", "method"], SECONDS, this.registry);
  readonly grpcServer = new LocalCounter("vnm_grpc_server_calls_total", "gRPC calls served, by method and code", ["method", "code"], this.registry);
  readonly grpcServerDuration = new LocalHistogram("vnm_grpc_server_call_duration_seconds", "gRPC call latency on the server", ["method"], SECONDS, this.registry);
  readonly grpcClient = new LocalCounter("vnm_grpc_client_calls_total", "gRPC calls made, by service, method and code", ["service", "method", "code"], this.registry);
  readonly grpcClientDuration = new LocalHistogram("vnm_grpc_client_call_duration_seconds", "gRPC call latency seen by the caller", ["service", "method"], SECONDS, this.registry);
  readonly cacheHits = new LocalCounter("vnm_cache_hits_total", "Collection reads answered from the cache", [], this.registry);
  readonly cacheMisses = new LocalCounter("vnm_cache_misses_total", "Collection reads the cache did not hold", [], this.registry);
  readonly cacheErrors = new LocalCounter("vnm_cache_errors_total", "Cache operations that failed (the cache is bypassed until reset)", [], this.registry);
  readonly eventStreams = new Gauge({ name: "vnm_event_streams_open", help: "Open /events streams", registers: [this.registry] });
  readonly eventsDropped = new LocalCounter("vnm_events_dropped_total", "Messages on the change subjects that /events did not pass on, by reason (changes.ts' ChangeDrop): a body that disagrees with its subject, a path not of its kind", ["reason"], this.registry);
  readonly publishFailures = new LocalCounter("vnm_nats_publish_failures_total", "Change notifications NATS did not take (retried from the outbox)", [], this.registry);

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
