// What every stage of request handling shares: the catalog and its routes, the upstream
// services, the cache, each route's plan and the options the gateway was started with.
import type { IncomingMessage, ServerResponse } from "node:http";
import { TLSSocket } from "node:tls";
import type { Bus, Catalog, Identity, Logger, Metrics, Route, Upstream } from "@vnm/kit";
import type { RoutePlan } from "./dispatch.ts";
import type { RateLimiter } from "@vnm/kit/limits";
import type { Seats } from "./fair.ts";
import type { CollectionCache } from "./cache.ts";
import type { Router } from "./router.ts";
import type { Target, Targets } from "./targets.ts";
import { clientAddress, type TrustFn, type TrustProxy } from "./trust.ts";

export interface GatewayOptions {
  catalog: Catalog;
  upstream: Upstream;
  cache: CollectionCache;
  log: Logger;
  /** The change bus: its state for /readyz, its feed for /events. */
  bus: Bus;
  /** This gateway's client credential, exchanged at the identity service for its service token. */
  serviceCredential: string;
  /** Whether the identity service's change notifications reach `bus` (NATS, or one process). */
  feedReachesIdentity: boolean;
  tokenTtlSeconds: number;
  /** Open /events streams a user may have on one gateway. */
  eventStreamsPerUser?: number;
  /** Requests per user per window (every token of the user counted together). */
  limiter: RateLimiter;
  /** Requests per client address per window. */
  sourceLimiter: RateLimiter;
  /** Requests of one user this gateway handles at once (0: no cap); beyond, 429. */
  requestsPerUser: number;
  /** Calls of each service under way at once at this gateway, shared fairly among tenants (fair.ts; 0: no seats). */
  seatsPerService: number;
  /** Calls of one tenant waiting for a seat of one service; beyond, 429. */
  seatQueue: number;
  /** The longest a call waits for its seat; then 429. */
  seatWaitMs: number;
  bodyLimit: number;
  callTimeoutMs: number;
  /** Which hops of X-Forwarded-For are believed (VNM_TRUST_PROXY, trust.ts). */
  trustProxy: TrustProxy;
  /** The gateway's Prometheus registry (served at /metrics). */
  metrics: Metrics;
  /** Whether the gateway is stopping: its answers then close their connections. */
  draining?: () => boolean;
}

export interface Gateway extends GatewayOptions {
  router: Router;
  /** The request targets worked out and kept (targets.ts). */
  targets: Targets;
  /** Each catalog route's plan (dispatch.ts). */
  plans: Map<Route, RoutePlan>;
  /** Each service's seats, shared fairly among tenants (fair.ts). */
  seats: Seats;
}

/**
 * What the API's handlers read of a request: Node's own, with its path, query (parsed as
 * express's "simple" parser does), client address, host and protocol. express provides the
 * same on its requests; the gateway's own listener sets them on the API's requests.
 */
export interface ApiRequest extends IncomingMessage {
  /** Always set on a server's request. */
  method: string;
  path: string;
  originalUrl: string;
  query: Readonly<Record<string, unknown>>;
  /** The target's path and query with what follows from them alone (set by the gateway's own listener). */
  target?: Target;
  ip: string | undefined;
  host: string | undefined;
  protocol: string;
}

/** What the stages of one request learn and pass on, kept in the response's `locals` as express keeps it. */
export type RequestState = {
  /** The client's well-formed X-Request-Id, or a new one; set by the edge before anything else. */
  requestId: string;
  /** When the edge began the request (performance.now()). */
  startedAt: number;
  /** The authenticated caller and its token (every API request but /login). */
  caller: { identity: Identity; token: string } | undefined;
  /** The catalog route's template, the label requests are counted under. */
  route: string | undefined;
  /** "<service>/<rpc>" and the domain of the route (for the audit trail). */
  rpc: string | undefined;
  domain: string | undefined;
  /** The path of an item a POST created (or would have: a dry run's). */
  created: string | undefined;
  /** Whether the request is a write's dry run (`?dryRun=All`), for the audit trail. */
  dryRun: boolean;
  /** Headers the route adds to whatever answer it gives (a flat name, value list; the edge writes them). */
  headers: readonly string[] | undefined;
  /** The user whose place among the requests under way this one holds (app.ts's InFlight). */
  holder: string | undefined;
  /** What still holds that place: its handling and its answer's closing (2), then one of them. */
  holds: number;
};

// express keeps the same state in its responses' `locals`.
declare global {
  namespace Express {
    interface Locals extends RequestState {}
  }
}

export interface ApiResponse extends ServerResponse<ApiRequest> {
  locals: RequestState;
}

/** The first of a comma-separated header's values. */
const firstOf = (v: string | string[] | undefined): string | undefined => {
  const s = Array.isArray(v) ? v[0] : v;
  return s?.split(",", 1)[0]?.trim() || undefined;
};

/**
 * Sets what express would on a request whose target is a plain path (`/a/b?c`), with the
 * same reading of X-Forwarded-For/-Host/-Proto under the same `trust` (trust.ts); false
 * for any other request target, which express itself takes. The path and query come from the
 * target's entry in `targets`, with what else follows from them alone.
 */
export function asApiExchange(req: IncomingMessage, res: ServerResponse, trust: TrustFn | undefined, targets: Targets): boolean {
  const url = req.url ?? "";
  if (url.charCodeAt(0) !== 47 /* / */ || url.charCodeAt(1) === 47) return false;
  const r = req as ApiRequest;
  const target = targets.of(url);
  r.originalUrl = url;
  r.target = target;
  r.path = target.path;
  r.query = target.query;
  r.ip = clientAddress(req, trust);
  // Host and protocol as the nearest proxy says, when it is trusted (express's reading).
  const proxied = trust?.(req.socket.remoteAddress ?? "", 0) ? req.headers : undefined;
  r.host = firstOf(proxied?.["x-forwarded-host"]) ?? req.headers.host ?? undefined;
  r.protocol = firstOf(proxied?.["x-forwarded-proto"]) ?? (req.socket instanceof TLSSocket ? "https" : "http");
  // Every key the API's stages set, from the start: one object shape for every request (an
  // object made by Object.create(null) is a hash table, each key a lookup): 174.0k instructions
  // per item hit against 176.7k (callgrind).
  (res as ApiResponse).locals = { requestId: "", startedAt: 0, caller: undefined, route: undefined, rpc: undefined, domain: undefined, created: undefined, dryRun: false, headers: undefined, holder: undefined, holds: 0 };
  return true;
}
