// What every stage of request handling shares: the catalog and its routes, the upstream
// services, the cache, the access rules and the options the gateway was started with.
import type { Access, Bus, Catalog, Logger, Metrics, Upstream } from "@vnm/kit";
import type { LoginLimits, RateLimiter } from "./auth.ts";
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
  /** The previous signing secret, still accepted while keys change (VNM_TOKEN_SECRET_PREVIOUS). */
  tokenSecretPrevious?: string;
  tokenTtlSeconds: number;
  /** Open /events streams a user may have on one gateway. */
  eventStreamsPerUser?: number;
  limiter: RateLimiter;
  loginFailures: LoginLimits;
  bodyLimit: number;
  callTimeoutMs: number;
  trustProxy: boolean;
  /** The gateway's Prometheus registry (served at /metrics). */
  metrics: Metrics;
}

export interface Gateway extends GatewayOptions {
  router: Router;
  rules: Map<string, Access>;
}
