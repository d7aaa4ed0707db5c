// The HTTP edge, in stages: the edge middleware (request ids, CORS, counts), the probes, the web
// console (console.ts), the API (login, the caller, /events, the root document, then the
// catalog's routes), and a last handler that gives anything express itself rejects the error body.
import { randomUUID } from "node:crypto";
import { accessRules, httpSpans, type Logger, memberOf, type Metrics, type RootDocumentInfo, stringMember } from "@vnm/kit";
import { type IncomingMessage, ServerResponse } from "node:http";
import { constants as H } from "node:http2";
import express, { type NextFunction } from "express";
import { type AuditTrail, auditTrail } from "./audit.ts";
import { consolePages } from "./console.ts";
import { authenticate, type Callers, gatewayCallers, loginHandler, logout, sendLogin, sourceKey, userKey } from "./auth.ts";
import { type ApiRequest, type ApiResponse, asApiExchange, type Gateway, type GatewayOptions, type RequestState } from "./context.ts";
import { dispatch, routePlans } from "./dispatch.ts";
import { docsRoutes, isDocsPath } from "./docs.ts";
import { MERGE_PATCH, patchItem } from "./patch.ts";
import { type EventFeed, eventFeed } from "./events.ts";
import { healthRoutes } from "./health.ts";
import { EdgeError, send, sendError } from "./http-error.ts";
import { Seats } from "./fair.ts";
import { JSON_TYPE, negotiate, vendor } from "./media.ts";
import { Router } from "./router.ts";
import { Target, Targets } from "./targets.ts";
import { rootDocument } from "./root.ts";
import { trustFunction } from "./trust.ts";

export type { GatewayOptions };

const ROOT_TYPE = vendor("Application-v5");
/** What an item that takes a PUT says of PATCH (RFC 5789). */
const ACCEPT_PATCH = ["Accept-Patch", MERGE_PATCH];
/**
 * Headers of every answer (a flat name, value list): CORS, and caching (answers depend on who asks
 * and what they accept; only an item's ETag may be revalidated). Written by `edgeWriteHead`.
 */
const EDGE_HEADERS = [
  "Access-Control-Allow-Origin",
  "*",
  "Access-Control-Expose-Headers",
  "Location, X-Request-Id, Link, ETag, Warning",
  "Cache-Control",
  "private, no-store",
  "Vary",
  "Accept, Authorization, X-Auth-Token",
];
/** The paths served by express's routes (no token): the probes, metrics and the API's description. */
const OPERATIONAL = new Set(["/healthz", "/readyz", "/metrics", "/openapi.json"]);
/** Paths counted under their own name. */
const NAMED_ROUTES = new Set(["/", "/login", "/logout", "/logout/all", "/events", ...OPERATIONAL]);
const CORS_PREFLIGHT_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
const CORS_PREFLIGHT_HEADERS = "Origin, X-Auth-Token, X-Auth-Project, Content-Type, Accept, Authorization";
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** The request's base URI, from a Host header that is a plain host name or address only. */
function baseUri(req: ApiRequest): string {
  const host = req.host;
  const safeHost = host && HOST.test(host) ? host : `127.0.0.1:${req.socket.localPort}`;
  return `${req.protocol}://${safeHost}`;
}

/** The route a request is counted under: its catalog template, else a fixed name (never the raw path). */
function routeLabel(req: ApiRequest, res: ApiResponse): string {
  const known = res.locals.route;
  if (known) return known;
  return NAMED_ROUTES.has(req.path) ? req.path : "unmatched";
}

/** The edge of every request: `begin` it, and answer it with a `Response` (the server's ServerResponse). */
interface Edge {
  /** Request id, start time and, for an answer that is no `Response`, the edge's writeHead and finish; OPTIONS answered here. True when the request goes on. */
  begin(req: ApiRequest, res: ApiResponse): boolean;
  Response: typeof ServerResponse<IncomingMessage>;
}

/**
 * Request id (echoed when well-formed), CORS, caching headers, request metrics, the access log
 * and the audit trail; OPTIONS answered here.
 */
function edge(metrics: Metrics, log: Logger, audit: AuditTrail, draining: () => boolean, inFlight: InFlight): Edge {
  const writeHead = edgeWriteHead(draining);
  // The metrics' series by label values (a bounded set: route templates, methods, statuses),
  // found through nested maps: no key string is built per request.
  type Series = { timer: { observe(seconds: number): void }; byStatus: Map<number, { inc(): void }> };
  const series = new Map<string, Map<string, Series>>();
  const count = (route: string, method: string, status: number, seconds: number) => {
    let byMethod = series.get(route);
    if (!byMethod) {
      byMethod = new Map();
      series.set(route, byMethod);
    }
    let c = byMethod.get(method);
    if (!c) {
      c = { timer: metrics.httpDuration.labels({ route, method }), byStatus: new Map() };
      byMethod.set(method, c);
    }
    let counter = c.byStatus.get(status);
    if (!counter) {
      counter = metrics.httpRequests.labels({ route, method, status: String(status) });
      c.byStatus.set(status, counter);
    }
    counter.inc();
    c.timer.observe(seconds);
  };
  /** A finished answer: counted, logged, and audited when it was a write. */
  const finished = (res: ApiResponse) => {
    const { req } = res;
    const route = routeLabel(req, res);
    const seconds = (performance.now() - res.locals.startedAt) / 1000;
    count(route, req.method, res.statusCode, seconds);
    const who = res.locals.caller?.identity;
    // The access line: at debug (LOG_LEVEL=debug shows every request; each is counted and timed in
    // the metrics, and every write is in the audit trail at info), at warn for a 5xx. At info it
    // cost a cached read 62 us of the gateway's CPU instead of 38 (docs/decisions.md).
    log[res.statusCode >= 500 ? "warn" : "debug"]("request", { requestId: res.locals.requestId, user: who?.name, tenant: who?.tenantId, route, method: req.method, status: res.statusCode, durationMs: seconds * 1000 });
    audit.record(req, res, who);
  };
  /**
   * The server's answers: the edge's writeHead on the prototype and the finish seen as it is
   * emitted, rather than an own writeHead and a "finish" listener set on every answer (4 us of
   * a gateway's 43 of CPU per cache hit). express gives the answers it routes its own prototype,
   * so `begin` sets both on those.
   */
  class Response extends ServerResponse<ApiRequest> {
    /** Set on each answer by asApiExchange, or by express (its answers' locals). */
    declare locals: RequestState;
    override emit(event: string | symbol, ...args: unknown[]): boolean {
      if (event === "finish") finished(this);
      else if (event === "close") inFlight.release(this);
      return super.emit(event, ...args);
    }
  }
  Response.prototype.writeHead = writeHead as unknown as Response["writeHead"];
  const begin = (req: ApiRequest, res: ApiResponse): boolean => {
    const given = req.headers["x-request-id"];
    res.locals.requestId = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    res.locals.startedAt = performance.now();
    if (!(res instanceof Response)) {
      res.writeHead = writeHead as unknown as ApiResponse["writeHead"];
      res.on("finish", () => finished(res));
      res.on("close", () => inFlight.release(res));
    }
    if (req.method !== "OPTIONS") return true;
    // Preflight-only headers (the Fetch standard reads them from a preflight's answer alone).
    res.setHeader("Access-Control-Allow-Methods", CORS_PREFLIGHT_METHODS);
    res.setHeader("Access-Control-Allow-Headers", CORS_PREFLIGHT_HEADERS);
    res.statusCode = H.HTTP_STATUS_OK;
    res.end();
    return false;
  };
  return { begin, Response };
}

/** The fewest entries InFlight keeps before it sweeps out the users with none under way. */
const SWEEP_FLOOR = 1024;

/**
 * The requests each user has under way at this gateway, capped. A request holds its place from
 * its token's check until both its handling is done and its answer has gone out to the
 * connection (or the connection is gone): a client that asks and never reads holds its places
 * until the write deadline cuts it off (index.ts), so it cannot pile up answers waiting in the
 * gateway's memory past the cap; and one that hangs up at once does not free its place while
 * the gateway still works on the answer.
 */
export class InFlight {
  /**
   * Each user's requests under way. A user back at none keeps an entry at 0 until the idle
   * entries outnumber the rest (`sweepAt`). When the entry left at each request's end and came
   * back at the next, the gateway's old generation grew 0.1 MB at every scavenge under a steady
   * load (`--trace-gc`: a major collection every ~5 s at 26,000 item hits a second); kept at 0,
   * it stays flat.
   */
  private readonly counts = new Map<string, number>();
  private readonly cap: number;
  /** Past this many entries, those at 0 go (and it becomes twice what is left, at least SWEEP_FLOOR). */
  private sweepAt = SWEEP_FLOOR;
  constructor(cap: number) {
    this.cap = cap;
  }

  /** The users with an entry (busy, or idle but not yet swept). */
  get size(): number {
    return this.counts.size;
  }

  /** Holds a place of `user`'s for `res`, given back at the second of its two releases; false when all are taken. */
  enter(user: string, res: ApiResponse): boolean {
    if (this.cap === 0) return true;
    const n = this.counts.get(user) ?? 0;
    if (n >= this.cap) return false;
    this.counts.set(user, n + 1);
    res.locals.holder = user;
    // An answer whose connection is already gone will not close again: its handling alone holds it.
    res.locals.holds = res.closed ? 1 : 2;
    return true;
  }

  /**
   * One of the two ends of a request's hold: its handling is over, or its answer closed (sent,
   * or its connection gone; called for every answer, holding a place or not). The place is given
   * back at the second.
   */
  release(res: ApiResponse): void {
    const user = res.locals?.holder;
    if (user === undefined || --res.locals.holds > 0) return;
    res.locals.holder = undefined;
    const n = (this.counts.get(user) ?? 1) - 1;
    this.counts.set(user, n);
    if (n === 0 && this.counts.size > this.sweepAt) this.sweep();
  }

  private sweep(): void {
    for (const [user, n] of this.counts) if (n === 0) this.counts.delete(user);
    this.sweepAt = Math.max(SWEEP_FLOOR, 2 * this.counts.size);
  }

  /** The 429 of a user whose places are all taken. */
  refusal(): EdgeError {
    return EdgeError.tooManyRequests(`More than ${this.cap} requests of this user at once at this gateway; wait for their answers`, 1);
  }
}

const plainWriteHead = ServerResponse.prototype.writeHead;

/** Whether a flat header list names `name` (any case). */
function names(headers: readonly unknown[], name: string): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const h = headers[i];
    if (typeof h === "string" && h.length === name.length && h.toLowerCase() === name.toLowerCase()) return true;
  }
  return false;
}

/**
 * How long clients are told an idle connection is kept (the Keep-Alive header): well under what
 * the server keeps it (65 s, longer than a load balancer's idle timeout), so a client that reads
 * the hint drops an idle connection before the gateway closes it, never sending a request on
 * a connection being closed. Short, because a stopping gateway waits that long for them (Node's
 * fetch drops an idle connection 2 s before the hint says).
 */
export const KEEP_ALIVE_HINT_S = 3;
const KEEP_ALIVE_HINT = ["Keep-Alive", `timeout=${KEEP_ALIVE_HINT_S}`];
/** While the gateway drains: every answer closes its connection, so the client's next request goes to a gateway that stays. */
const CLOSE = ["Connection", "close"];

/**
 * The edge's writeHead (set on every response): the request id, EDGE_HEADERS, the connection hint
 * (Keep-Alive, or `Connection: close` while `draining`) and the route's own (`locals.headers`) join
 * the answer's own headers, whichever way the answer is written (setHeader then end, writeHead
 * with an object or a flat list, express's res.json). A header the answer names itself wins, and
 * an answer that names Connection gets no hint. Given a flat list and no header set before, Node
 * writes the list as it is, without a header object or a check of each name and value: cached
 * answers are written so, which is why nothing on the way to them calls setHeader (a single call
 * puts every header of the answer through Node's checks: 31 against 24 us of gateway CPU per hit).
 */
function edgeWriteHead(draining: () => boolean) {
  return function writeHead(this: ApiResponse, status: number, reasonOrHeaders?: unknown, maybeHeaders?: unknown): ApiResponse {
    const reason = typeof reasonOrHeaders === "string" ? reasonOrHeaders : undefined;
    const given = reason === undefined ? reasonOrHeaders : maybeHeaders;
    // Headers given as an object are written as a flat list too.
    const list = Array.isArray(given) ? (given as unknown[]) : given && typeof given === "object" ? Object.entries(given).flat() : undefined;
    const named = (k: string) => (list !== undefined && names(list, k)) || this.hasHeader(k);
    const missing: string[] = [];
    const add = (headers: readonly string[]) => {
      for (let i = 0; i < headers.length; i += 2) if (!named(headers[i]!)) missing.push(headers[i]!, headers[i + 1]!);
    };
    if (!named("X-Request-Id")) missing.push("X-Request-Id", this.locals.requestId);
    add(EDGE_HEADERS);
    if (this.locals.headers) add(this.locals.headers);
    if (!named("Connection")) add(draining() ? CLOSE : KEEP_ALIVE_HINT);
    const write = plainWriteHead as unknown as (this: ApiResponse, status: number, reason: string | undefined, headers: unknown) => ApiResponse;
    if (list) return write.call(this, status, reason, [...missing, ...list]);
    for (let i = 0; i < missing.length; i += 2) this.setHeader(missing[i]!, missing[i + 1]!);
    return write.call(this, status, reason, given);
  };
}

/**
 * Every request but the probes: login, then the source's rate limit, the caller and the user's
 * rate limit, then (but for /events) a place among the user's requests under way, then the path.
 */
function api(gw: Gateway, feed: EventFeed, callers: Callers, inFlight: InFlight) {
  const login = loginHandler({ ...gw, ttlSeconds: gw.tokenTtlSeconds, serviceToken: callers.serviceToken });
  const roots = new Map(gw.catalog.rootDocuments.map((d) => [d.path, d]));
  return async (req: ApiRequest, res: ApiResponse) => {
    try {
      if (req.path === "/login") return sendLogin(res, await login(req));
      // Every request from one address is counted, before its token costs a check.
      const fromSource = gw.sourceLimiter.enabled ? await gw.sourceLimiter.hit(sourceKey(req.ip)) : undefined;
      if (fromSource && !fromSource.allowed) throw EdgeError.tooManyRequests("Too many requests from this address; slow down", fromSource.retryAfter);
      // A known caller is answered without an await (most requests: the same token again).
      const found = authenticate(req, callers.check);
      const caller = found instanceof Promise ? await found : found;
      // Counted per user, so a user's every token (another login) shares one count.
      const verdict = gw.limiter.enabled ? await gw.limiter.hit(userKey(caller.identity)) : undefined;
      if (verdict && !verdict.allowed) {
        throw EdgeError.tooManyRequests("Too many requests for this user; slow down", verdict.retryAfter);
      }
      res.locals.caller = caller;
      if (req.path === "/logout" || req.path === "/logout/all") return await logout(req, res, caller, callers);
      if (req.path === "/events") {
        // A stream never ends, so HEAD (which never gets the body) is refused too.
        if (req.method !== "GET") throw EdgeError.methodNotAllowed(req.method, "/events", ["GET"]);
        if (!negotiate(req.headers.accept, ["text/event-stream"])) throw EdgeError.notAcceptable(["text/event-stream"]);
        return await feed.serve(req, res, caller.identity, baseUri(req));
      }
      // Streams have a cap of their own (VNM_EVENT_STREAMS_PER_USER); every other answer holds a place.
      if (!inFlight.enter(caller.identity.userId, res)) throw inFlight.refusal();
      try {
        const root = req.path === "/" ? null : roots.get(req.path.endsWith("/") ? req.path.slice(0, -1) : req.path);
        if (root !== undefined) return serveRoot(gw, req, res, root ?? undefined);
        await route(gw, req, res);
      } finally {
        inFlight.release(res);
      }
    } catch (err) {
      sendError(res, err, res.locals.requestId, gw.log);
    }
  };
}

/** The main root document, or another one a proto declares. */
function serveRoot(gw: Gateway, req: ApiRequest, res: ApiResponse, which?: RootDocumentInfo): void {
  if (req.method !== "GET" && req.method !== "HEAD") throw EdgeError.methodNotAllowed(req.method, req.path, ["GET"]);
  const offers = [which ? vendor(which.mediaType) : ROOT_TYPE, JSON_TYPE];
  const type = negotiate(req.headers.accept, offers);
  if (!type) throw EdgeError.notAcceptable(offers);
  send(res, H.HTTP_STATUS_OK, type, rootDocument(gw.catalog, baseUri(req), which));
}

/** The catalog route of the path: dispatched, or 405 with Allow, or a 404 that says why. */
async function route(gw: Gateway, req: ApiRequest, res: ApiResponse): Promise<void> {
  const method = req.method === "HEAD" ? "GET" : req.method;
  // express's requests (a request target it took) have no Target of the gateway's own.
  const target = req.target ?? new Target(req.path, req.query);
  const { match, allowed } = target.route(method, gw.router);
  const parts = target.parts;
  if (match) {
    const plan = gw.plans.get(match.route)!;
    res.locals.rpc = plan.rpc;
    res.locals.domain = match.route.domain;
    if (method === "PATCH") return patchItem(gw, req, res, match, plan, baseUri(req));
    if (allowed.includes("PATCH")) res.locals.headers = ACCEPT_PATCH;
    return dispatch(gw, req, res, match, plan, baseUri(req));
  }
  if (allowed.length > 0) throw EdgeError.methodNotAllowed(req.method, req.path, allowed);
  if (parts && gw.router.unserved(parts)) {
    throw EdgeError.notFound(`${parts[0]} are not served by this API (${req.path}): only the kinds of the root document are`);
  }
  throw EdgeError.notFound(`There is no resource at ${req.path}`);
}

/** Anything express itself rejects still gets the error body, never its HTML page. */
function lastResort(log: GatewayOptions["log"]) {
  return (err: unknown, _req: ApiRequest, res: ApiResponse, _next: NextFunction) => {
    const requestId = res.locals.requestId || randomUUID();
    const status = memberOf(err, "status");
    const client = typeof status === "number" && status >= 400 && status < 500;
    sendError(res, client ? EdgeError.client(status, stringMember(err, "message") || "Bad request") : err, requestId, log);
  };
}

/**
 * The gateway's HTTP handling: `handle` is the server's listener. A request for a plain path of
 * the API goes straight to the API's handler (the same one express mounts), without express's
 * router; the probes, metrics, the API's description and any other request target go through
 * express.
 */
export function createApp(opts: GatewayOptions): {
  app: express.Express;
  feed: EventFeed;
  audit: AuditTrail;
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** The server's ServerResponse (createServer's option of that name). */
  Response: typeof ServerResponse<IncomingMessage>;
} {
  const seats = new Seats({ seats: opts.seatsPerService, queue: opts.seatQueue, waitMs: opts.seatWaitMs });
  const gw: Gateway = { ...opts, router: new Router(opts.catalog), targets: new Targets(), plans: routePlans(opts.catalog, accessRules(opts.catalog), opts.cache.items), seats };
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  const trust = trustFunction(opts.trustProxy);
  app.set("trust proxy", trust ?? false);
  const spans = httpSpans();
  const audit = auditTrail(opts.catalog, opts.bus, opts.log);
  const inFlight = new InFlight(opts.requestsPerUser);
  const { begin, Response } = edge(opts.metrics, opts.log, audit, opts.draining ?? (() => false), inFlight);
  app.use(spans);
  app.use((req, res, next) => {
    if (begin(req, res)) next();
  });
  healthRoutes(app, gw);
  docsRoutes(app, opts.log);
  const callers = gatewayCallers(opts);
  const feed = eventFeed(opts.catalog, opts.bus, opts.log, opts.metrics, callers.check, opts.serviceCredential, opts.eventStreamsPerUser);
  const serve = api(gw, feed, callers, inFlight);
  // The web console: / for a browser, /console/* (no token needed), before the API.
  const ui = consolePages({ apiTypes: [ROOT_TYPE, JSON_TYPE], log: opts.log });
  app.use((req, res) => ui(req, res) || serve(req, res));
  app.use(lastResort(opts.log));
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (!asApiExchange(req, res, trust, gw.targets) || OPERATIONAL.has((req as ApiRequest).path) || isDocsPath((req as ApiRequest).path)) return void app(req, res);
    const r = req as ApiRequest;
    const s = res as ApiResponse;
    spans(r, s, () => {
      if (begin(r, s) && !ui(r, s)) void serve(r, s);
    });
  };
  return { app, feed, audit, handle, Response };
}
