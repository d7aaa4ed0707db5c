// Gateway assembly, in stages: read the configuration, load the catalog, connect the cache and
// the bus, connect the upstream services, build the app, listen.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Server as NetServer } from "node:net";
import type { Duplex } from "node:stream";
import {
  addressVariable,
  announceReady,
  type Bus,
  type Catalog,
  type Contract,
  createLogger,
  createUpstream,
  DEFAULT_DRAIN_MS,
  type Logger,
  loadConfig,
  loadContract,
  localBus,
  Metrics,
  natsBus,
  onShutdown,
  reclaimWhenQuiet,
  startTelemetry,
  optional,
  parseBool,
  parseChangeSubject,
  parseNonNegativeInt,
  parsePort,
  parsePositiveInt,
  PROTO_DIR,
} from "@vnm/kit";
import { rateLimiter, redisUrl } from "@vnm/kit/limits";
import { createApp, KEEP_ALIVE_HINT_S } from "./app.ts";
import type { EventFeed } from "./events.ts";
import { parseTrustProxy } from "./trust.ts";
import { writeDeadline } from "./deadline.ts";
import { EdgeError, rawErrorAnswer } from "./http-error.ts";
import { type CollectionCache, connectRedis, memoryCache, redisCache } from "./cache.ts";

export { addressVariable };

export interface RunningGateway {
  port: number;
  server: Server;
  cache: CollectionCache;
  bus: Bus;
  stop(): Promise<void>;
}

/** The gateway's settings from its environment; a bad value stops it, naming the variable. */
export function gatewayConfig(env: NodeJS.ProcessEnv) {
  return loadConfig(
    {
      port: { env: "PORT", default: "8080", parse: parsePort },
      host: { env: "HOST", default: "127.0.0.1" },
      redisUrl: { env: "REDIS_URL", default: "", parse: redisUrl },
      natsUrl: { env: "NATS_URL", default: "", parse: optional },
      natsUser: { env: "VNM_NATS_USER", default: "", parse: optional },
      natsPassword: { env: "VNM_NATS_PASSWORD", default: "", parse: optional },
      prefix: { env: "VNM_BUS_PREFIX", default: "vnm" },
      busReplicas: { env: "VNM_BUS_REPLICAS", default: "1", parse: parsePositiveInt },
      bodyLimit: { env: "VNM_BODY_LIMIT", default: String(1024 * 1024), parse: parsePositiveInt },
      callTimeoutMs: { env: "VNM_CALL_TIMEOUT_MS", default: "10000", parse: parsePositiveInt },
      trustProxy: { env: "VNM_TRUST_PROXY", default: "false", parse: parseTrustProxy },
      serviceCredential: { env: "VNM_SERVICE_CREDENTIAL", description: "the gateway's client credential at the identity service" },
      tokenTtlSeconds: { env: "VNM_TOKEN_TTL_SECONDS", default: "3600", parse: parsePositiveInt },
      eventStreamsPerUser: { env: "VNM_EVENT_STREAMS_PER_USER", default: "5", parse: parsePositiveInt },
      rateLimit: { env: "VNM_RATE_LIMIT", default: "1000", parse: parseNonNegativeInt },
      rateWindowSeconds: { env: "VNM_RATE_WINDOW_SECONDS", default: "10", parse: parsePositiveInt },
      // Unset: ten times VNM_RATE_LIMIT (off with it).
      sourceRateLimit: { env: "VNM_SOURCE_RATE_LIMIT", default: "", parse: (raw: string) => (raw === "" ? undefined : parseNonNegativeInt(raw)) },
      requestsPerUser: { env: "VNM_REQUESTS_PER_USER", default: "64", parse: parseNonNegativeInt },
      // Fair shares of each service among tenants (fair.ts, docs/operations.md "Fair shares").
      seatsPerService: { env: "VNM_SEATS_PER_SERVICE", default: "8", parse: parseNonNegativeInt },
      seatQueue: { env: "VNM_SEAT_QUEUE", default: "64", parse: parsePositiveInt },
      seatWaitMs: { env: "VNM_SEAT_WAIT_MS", default: "10000", parse: parsePositiveInt },
      writeDeadlineMs: { env: "VNM_WRITE_DEADLINE_MS", default: "30000", parse: parsePositiveInt },
      requestTimeoutMs: { env: "VNM_REQUEST_TIMEOUT_MS", default: "30000", parse: parsePositiveInt },
      cacheKindBytes: { env: "VNM_CACHE_KIND_BYTES", default: String(32 * 1024 * 1024), parse: parsePositiveInt },
      cacheLocalBytes: { env: "VNM_CACHE_LOCAL_BYTES", default: String(16 * 1024 * 1024), parse: parsePositiveInt },
      itemCache: { env: "VNM_ITEM_CACHE", default: "true", parse: parseBool },
      // Unset: 10 s through Sentinels (a failover moves the cache to another server), else 0.
      cacheFenceMs: { env: "VNM_CACHE_FENCE_MS", default: "", parse: (raw: string) => (raw === "" ? undefined : parseNonNegativeInt(raw)) },
      protoDir: { env: "VNM_PROTO_DIR", default: PROTO_DIR },
      drainMs: { env: "VNM_DRAIN_MS", default: String(DEFAULT_DRAIN_MS), parse: parsePositiveInt },
      reusePort: { env: "VNM_REUSE_PORT", default: "false", parse: parseBool },
    },
    env,
  );
}
type Config = ReturnType<typeof gatewayConfig>;

/** The cache and the bus; changes committed anywhere (another replica, a cascade) invalidate the cache. */
function connectEdges(cfg: Config, catalog: Catalog, log: Logger, metrics: Metrics, together: boolean) {
  // Alone, stand-ins are a fault to warn of; with every part in this process, what they share.
  const standIn = together ? log.debug : log.warn;
  const redis = cfg.redisUrl ? connectRedis(cfg.redisUrl) : undefined;
  const kinds = () => catalog.resources.map((m) => m.resource!.kind);
  const fenceMs = cfg.cacheFenceMs ?? (cfg.redisUrl?.startsWith("redis-sentinel://") ? 10_000 : 0);
  const limits = { kindBytes: cfg.cacheKindBytes, localBytes: cfg.cacheLocalBytes, items: cfg.itemCache, fenceMs };
  const cache = redis ? redisCache(redis, cfg.prefix, kinds, log, metrics.cacheErrors, limits) : memoryCache(1000, cfg.itemCache);
  if (!redis) standIn("REDIS_URL not set: collection cache kept in this process (stand-in cache)");
  const bus = cfg.natsUrl ? natsBus({ url: cfg.natsUrl, user: cfg.natsUser, password: cfg.natsPassword, prefix: cfg.prefix, log, name: "vnm-gateway", replicas: cfg.busReplicas }) : localBus(cfg.prefix);
  if (!cfg.natsUrl) standIn("NATS_URL not set: no change feed from other processes (stand-in bus)");
  bus.subscribe(
    [">"],
    (msg) => {
      const parsed = parseChangeSubject(cfg.prefix, msg.subject);
      if (parsed) void cache.invalidate(catalog.affected([`${parsed.domain}.${parsed.kind}:${parsed.event}`]));
    },
    (state) => cache.setFeedConnected(state === "connected"),
  );
  if (bus.state() !== "connected") cache.setFeedConnected(false);
  const limiter = rateLimiter(cfg.rateLimit, cfg.rateWindowSeconds, redis, cfg.prefix);
  const sourceLimiter = rateLimiter(cfg.sourceRateLimit ?? cfg.rateLimit * 10, cfg.rateWindowSeconds, redis, `${cfg.prefix}:src`);
  return { cache, bus, limiter, sourceLimiter };
}

/** One channel per service whose address is given; the others answer 503 naming their variable. */
function connectUpstreams({ catalog, pkg }: Contract, env: NodeJS.ProcessEnv, log: Logger, metrics: Metrics) {
  const domains = [...new Set(catalog.services.map((s) => s.domain))];
  const missing = domains.filter((d) => !env[addressVariable(d)]);
  if (missing.length > 0) {
    log.warn("services not configured: their endpoints answer 503", { variables: missing.map(addressVariable) });
  }
  return createUpstream(pkg, catalog.services, (d) => env[addressVariable(d)] || undefined, metrics);
}

/**
 * Listens on PORT (shared with the other gateway processes of this machine when VNM_REUSE_PORT:
 * the kernel spreads new connections over them). While the gateway drains, every answer says
 * `Connection: close` (the edge's writeHead, app.ts), so a keep-alive client opens its next
 * connection to a gateway that stays.
 */
async function listen(handle: (req: IncomingMessage, res: ServerResponse) => void, Response: typeof ServerResponse<IncomingMessage>, cfg: Config, log: Logger): Promise<{ server: Server; port: number }> {
  // A client gets VNM_REQUEST_TIMEOUT_MS (30 s) for its headers and its whole request; Node would
  // wait 300 s, and looks at slow requests only every 30 s.
  const t = cfg.requestTimeoutMs;
  const options = { headersTimeout: t, requestTimeout: t, connectionsCheckingInterval: Math.min(1_000, t), keepAliveTimeout: 65_000, ServerResponse: Response };
  const server = createServer(options, handle);
  server.on("clientError", answerClientError);
  // An answer not read within VNM_WRITE_DEADLINE_MS loses its connection (deadline.ts).
  const deadline = writeDeadline(server, cfg.writeDeadlineMs, (socket) => log.info("connection cut: its answer was not read within the write deadline", { client: socket.remoteAddress, deadlineMs: cfg.writeDeadlineMs }));
  server.once("close", () => deadline.close());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: cfg.port, host: cfg.host, reusePort: cfg.reusePort }, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === "object" && address ? address.port : cfg.port };
}

/**
 * HTTP that Node's parser refuses (a Content-Length shorter than the body, a malformed request
 * line) or a request too slow to arrive still gets the error body, then the connection closes.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const e = err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? EdgeError.requestTimeout("The request did not arrive in time") : EdgeError.badRequest("The request is not valid HTTP");
  socket.end(rawErrorAnswer(e, randomUUID()));
}

/**
 * The gateway's shutdown: it stops accepting connections, ends the event streams (their clients
 * resume elsewhere with Last-Event-ID), lets the requests under way finish for `drainMs` at most,
 * then closes what it uses. An idle connection is closed once its client has dropped it (past
 * the Keep-Alive hint); a busy one closes after its answer (`Connection: close`).
 */
function stopper(server: Server, parts: { close(): unknown }[], feed: EventFeed, log: Logger, drainMs: number) {
  return async () => {
    await new Promise<void>((resolve) => {
      // net's close, not http's: that one would also close the idle connections at once, when
      // a client may be sending its next request on one.
      NetServer.prototype.close.call(server, () => resolve());
      feed.closeAll();
      setTimeout(() => server.closeIdleConnections(), Math.min(drainMs, KEEP_ALIVE_HINT_S * 1000 + 500)).unref();
      setTimeout(() => {
        server.closeAllConnections();
        resolve();
      }, drainMs).unref();
    });
    for (const p of parts) await p.close();
    log.info("gateway stopped");
  };
}

export interface GatewayParts {
  /** The metrics of the services running in this process, served at /metrics with the gateway's. */
  serviceMetrics?: Metrics[];
  /** The proto files, when the process has loaded them already (else read from VNM_PROTO_DIR). */
  contract?: Contract;
}

export async function startGateway(env: NodeJS.ProcessEnv = process.env, parts: GatewayParts = {}): Promise<RunningGateway> {
  const log = createLogger({ service: "gateway" });
  const stopTelemetry = await startTelemetry("gateway", env);
  const cfg = gatewayConfig(env);
  const contract = parts.contract ?? loadContract(cfg.protoDir);
  const { catalog } = contract;
  const metrics = new Metrics("gateway");
  for (const m of parts.serviceMetrics ?? []) metrics.include(m);
  // The services run in this process when it hands their metrics (the launcher's default).
  const together = parts.serviceMetrics !== undefined;
  const { cache, bus, limiter, sourceLimiter } = connectEdges(cfg, catalog, log, metrics, together);
  const upstream = connectUpstreams(contract, env, log, metrics);
  let draining = false;
  const { handle, Response, feed, audit } = createApp({ ...cfg, catalog, upstream, cache, bus, log, limiter, sourceLimiter, metrics, feedReachesIdentity: bus.kind === "nats" || together, draining: () => draining });
  const { server, port } = await listen(handle, Response, cfg, log);
  log.info("gateway listening", { url: `http://${cfg.host}:${port}`, routes: catalog.routes.length, cache: cache.kind, bus: bus.kind });
  reclaimWhenQuiet(log);
  // The audit records still waiting go out after the last request is answered, before the bus closes.
  const drain = stopper(server, [{ close: audit.flush }, upstream, bus, cache, { close: stopTelemetry }], feed, log, cfg.drainMs);
  const stop = () => {
    draining = true;
    return drain();
  };
  onShutdown(stop, log, cfg.drainMs);
  announceReady();
  return { port, server, cache, bus, stop };
}
