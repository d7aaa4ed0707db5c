// Gateway assembly: reads its configuration, loads the catalog, connects to the services, the
// bus and the cache, and listens.
import type { Server } from "node:http";
import {
  buildCatalog,
  createLogger,
  type Bus,
  loadConfig,
  loadGrpc,
  localBus,
  natsBus,
  onShutdown,
  optional,
  parseBool,
  parseChangeSubject,
  parsePort,
  parseNonNegativeInt,
  parsePositiveInt,
} from "@vnm/kit";
import { createApp } from "./app.ts";
import { rateLimiter } from "./auth.ts";
import { type CollectionCache, connectRedis, memoryCache, redisCache } from "./cache.ts";
import { createUpstream } from "./upstream.ts";

export interface RunningGateway {
  port: number;
  server: Server;
  cache: CollectionCache;
  bus: Bus;
  stop(): Promise<void>;
}

/** Environment variable holding a domain's gRPC address(es): VNM_<DOMAIN>_ADDR. */
export function addressVariable(domain: string): string {
  return `VNM_${domain.toUpperCase()}_ADDR`;
}

export async function startGateway(env: NodeJS.ProcessEnv = process.env): Promise<RunningGateway> {
  const log = createLogger({ service: "gateway" });
  const catalog = buildCatalog();
  const domains = [...new Set(catalog.services.map((s) => s.domain))];
  const cfg = loadConfig(
    {
      port: { env: "PORT", default: "8080", parse: parsePort },
      host: { env: "HOST", default: "127.0.0.1" },
      redisUrl: { env: "REDIS_URL", default: "", parse: optional },
      natsUrl: { env: "NATS_URL", default: "", parse: optional },
      prefix: { env: "VNM_BUS_PREFIX", default: "vnm" },
      bodyLimit: { env: "VNM_BODY_LIMIT", default: String(1024 * 1024), parse: parsePositiveInt },
      callTimeoutMs: { env: "VNM_CALL_TIMEOUT_MS", default: "10000", parse: parsePositiveInt },
      trustProxy: { env: "VNM_TRUST_PROXY", default: "false", parse: parseBool },
      tokenSecret: { env: "VNM_TOKEN_SECRET", description: "secret for signing tokens, shared by gateways and services" },
      tokenTtlSeconds: { env: "VNM_TOKEN_TTL_SECONDS", default: "3600", parse: parsePositiveInt },
      rateLimit: { env: "VNM_RATE_LIMIT", default: "1000", parse: parseNonNegativeInt },
      rateWindowSeconds: { env: "VNM_RATE_WINDOW_SECONDS", default: "10", parse: parsePositiveInt },
      loginFailureLimit: { env: "VNM_LOGIN_FAILURE_LIMIT", default: "10", parse: parseNonNegativeInt },
      loginWindowSeconds: { env: "VNM_LOGIN_WINDOW_SECONDS", default: "300", parse: parsePositiveInt },
      ...Object.fromEntries(
        domains.map((d) => [`addr_${d}`, { env: addressVariable(d), description: `gRPC address of the ${d} service` }]),
      ),
    },
    env,
  );
  const addressOf = (d: string) => (cfg as unknown as Record<string, string>)[`addr_${d}`]!;

  const kinds = () => catalog.resources.map((m) => m.resource!.kind);
  const redis = cfg.redisUrl ? connectRedis(cfg.redisUrl) : undefined;
  const cache = redis ? redisCache(redis, cfg.prefix, kinds, log) : memoryCache();
  const limiter = rateLimiter(cfg.rateLimit, cfg.rateWindowSeconds, redis, cfg.prefix);
  const loginFailures = rateLimiter(cfg.loginFailureLimit, cfg.loginWindowSeconds, redis, `${cfg.prefix}:login`);
  if (!cfg.redisUrl) log.warn("REDIS_URL not set: collection cache kept in this process (stand-in cache)");
  const bus = cfg.natsUrl ? natsBus({ url: cfg.natsUrl, prefix: cfg.prefix, log, name: "vnm-gateway" }) : localBus(cfg.prefix);
  if (!cfg.natsUrl) log.warn("NATS_URL not set: no change feed from other processes (stand-in bus)");
  // Changes committed anywhere (another gateway replica, a cascade) invalidate the cache here.
  bus.subscribe(
    (msg) => {
      const parsed = parseChangeSubject(cfg.prefix, msg.subject);
      if (parsed) void cache.invalidate(catalog.affected([`${parsed.kind}:${parsed.event}`]));
    },
    (state) => cache.setFeedConnected(state === "connected"),
  );
  if (bus.state() !== "connected") cache.setFeedConnected(false);

  const upstream = createUpstream(loadGrpc(), catalog.services, addressOf);
  const { app } = createApp({
    catalog,
    upstream,
    cache,
    log,
    bus,
    tokenSecret: cfg.tokenSecret,
    tokenTtlSeconds: cfg.tokenTtlSeconds,
    limiter,
    loginFailures,
    bodyLimit: cfg.bodyLimit,
    callTimeoutMs: cfg.callTimeoutMs,
    trustProxy: cfg.trustProxy,
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(cfg.port, cfg.host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : cfg.port;
  log.info("gateway listening", {
    url: `http://${cfg.host}:${port}`,
    routes: catalog.routes.length,
    cache: cache.kind,
    bus: bus.kind,
  });

  const stop = async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      setTimeout(() => {
        server.closeAllConnections();
        resolve();
      }, 5_000).unref();
    });
    upstream.close();
    await bus.close();
    await cache.close();
    log.info("gateway stopped");
  };
  onShutdown(stop, log);
  return { port, server, cache, bus, stop };
}
