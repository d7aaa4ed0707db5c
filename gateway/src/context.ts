// What every stage of request handling shares: the catalog and its routes, the upstream
// services, the cache, the access rules and the options the gateway was started with.
import type { Access, Bus, Catalog, Logger, Upstream } from "@vnm/kit";
import type { RateLimiter } from "./auth.ts";
import type { CollectionCache } from "./cache.ts";
import type { Router } from "./router.ts";

export interface GatewayOptions {
  catalog: Catalog;
  upstream: Upstream;
  cache: CollectionCache;
  log: Logger;
  /** The change bus: its state for /readyz, its feed for /events. */
  bus: Bus;
  tokenSecret: string;
  tokenTtlSeconds: number;
  limiter: RateLimiter;
  loginFailures: RateLimiter;
  bodyLimit: number;
  callTimeoutMs: number;
  trustProxy: boolean;
}

export interface Metrics {
  requests: Map<string, number>;
  cacheHits: number;
  cacheMisses: number;
}

export interface Gateway extends GatewayOptions {
  router: Router;
  rules: Map<string, Access>;
  metrics: Metrics;
}
