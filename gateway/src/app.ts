// The HTTP edge. Every API route comes from the catalog (the proto files); this file holds
// only what is common to all of them: request ids, CORS, negotiation, bodies, errors, the
// collection cache, health, and the root document.
import { randomUUID } from "node:crypto";
import { status as Code } from "@grpc/grpc-js";
import {
  ApiError,
  accessRules,
  type Bus,
  coarseDenial,
  type Identity,
  type Logger,
  parseTemplate,
  type Segment,
  tokenVerifier,
  type Violation,
} from "@vnm/kit";
import express, { type NextFunction, type Request, type Response } from "express";
import { authenticate, loginHandler, type RateLimiter, sendLogin, tokenKey } from "./auth.ts";
import { readBodyText } from "./body.ts";
import type { CollectionCache } from "./cache.ts";
import { eventFeed } from "./events.ts";
import { type Catalog, type Route, templateShape } from "@vnm/kit";
import { bind, type Match, Router } from "./router.ts";
import { HTTP_STATUS, HttpError, send, sendError } from "./http-error.ts";
import { essence, JSON_TYPE, negotiate, vendor } from "./media.ts";
import { etagMatches, etagOf, fromJson, fromText, itemPath, parseJson, toJson } from "./transcode.ts";
import type { Upstream } from "./upstream.ts";

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
  version?: string;
}

const ROOT_TYPE = vendor("Application-v5");
const CORS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, PUT, DELETE, OPTIONS",
  "Access-Control-Expose-Headers": "Location, X-Request-Id, Link, ETag",
};
const CORS_PREFLIGHT_HEADERS = "Origin, X-Auth-Token, X-Auth-Project, Content-Type, Accept, Authorization";
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export interface Metrics {
  requests: Map<string, number>;
  cacheHits: number;
  cacheMisses: number;
}

export function createApp(opts: GatewayOptions): { app: express.Express; metrics: Metrics } {
  const { catalog, upstream, cache, log } = opts;
  const router = new Router(catalog.routes);
  const metrics: Metrics = { requests: new Map(), cacheHits: 0, cacheMisses: 0 };
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", opts.trustProxy);

  const baseUri = (req: Request): string => {
    const host = req.host;
    const safeHost = host && HOST.test(host) ? host : `127.0.0.1:${req.socket.localPort}`;
    return `${req.protocol}://${safeHost}`;
  };

  app.use((req: Request, res: Response, next: NextFunction) => {
    const given = req.headers["x-request-id"];
    const id = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    res.locals["requestId"] = id;
    res.setHeader("X-Request-Id", id);
    for (const [k, v] of Object.entries(CORS)) res.setHeader(k, v);
    res.on("finish", () => {
      const key = `${Math.floor(res.statusCode / 100)}xx`;
      metrics.requests.set(key, (metrics.requests.get(key) ?? 0) + 1);
    });
    if (req.method === "OPTIONS") {
      res.setHeader("Access-Control-Allow-Headers", CORS_PREFLIGHT_HEADERS);
      res.status(200).end();
      return;
    }
    next();
  });

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });

  app.get("/readyz", async (_req, res) => {
    const checks: Record<string, string> = {};
    const domains = [...new Set(catalog.services.map((s) => s.domain))];
    const results = await Promise.all([
      ...domains.map(async (d) => [d, (await upstream.health(d, 1_000)) ? "ok" : "unavailable"] as const),
      cache.ready().then((ok) => ["cache", ok ? "ok" : "unavailable"] as const),
      Promise.resolve(["bus", opts.bus.state() === "connected" ? "ok" : "unavailable"] as const),
    ]);
    for (const [k, v] of results) checks[k] = v;
    const ok = Object.values(checks).every((v) => v === "ok");
    res.status(ok ? 200 : 503).json({ status: ok ? "ok" : "unavailable", checks });
  });

  app.get("/metrics", (_req, res) => {
    const lines = ["# TYPE vnm_http_responses_total counter"];
    for (const [k, v] of metrics.requests) lines.push(`vnm_http_responses_total{class="${k}"} ${v}`);
    lines.push("# TYPE vnm_cache_hits_total counter", `vnm_cache_hits_total ${metrics.cacheHits}`);
    lines.push("# TYPE vnm_cache_misses_total counter", `vnm_cache_misses_total ${metrics.cacheMisses}`);
    const mem = process.memoryUsage();
    lines.push("# TYPE vnm_process_memory_bytes gauge");
    for (const k of ["rss", "heapTotal", "heapUsed", "external", "arrayBuffers"] as const) {
      lines.push(`vnm_process_memory_bytes{kind="${k}"} ${mem[k]}`);
    }
    res.type("text/plain; version=0.0.4").send(`${lines.join("\n")}\n`);
  });

  const rootDocument = (base: string): string => {
    const doc: Record<string, string> = { uri: `${base}/`, version: "v5.0" };
    for (const m of catalog.resources) {
      const r = m.resource!;
      if (!r.rootPath) continue;
      if (r.rootCollection) doc[r.rootCollection] = base + r.rootPath;
      if (r.rootTemplate) doc[r.rootTemplate] = `${base}${r.rootPath}/{id}`;
    }
    return JSON.stringify(doc);
  };

  const login = loginHandler({
    secret: opts.tokenSecret,
    ttlSeconds: opts.tokenTtlSeconds,
    upstream,
    callTimeoutMs: opts.callTimeoutMs,
    failures: opts.loginFailures,
  });
  const rules = accessRules(catalog);
  const verify = tokenVerifier(opts.tokenSecret);
  const feed = eventFeed(catalog, rules, opts.bus, log);
  // Links to kinds this interface only references (a bridge's filter chains, a load balancer's
  // router) lead to paths no route serves; a GET there says so rather than "no resource".
  const unserved: Segment[][] =
    catalog.resources.flatMap((m) =>
      m.fields
        .map((f) => f.link)
        // Links the gateway resolves (every placeholder names a field), not client templates.
        .filter((t): t is string => !!t && [...t.matchAll(/\{\+?([^}]+)\}/g)].every((p) => m.byName.has(p[1]!)))
        .filter((t) => !t.startsWith("{"))
        // A segment holding any placeholder ({prefix}_{length}) is one variable segment.
        .map((t) => t.replace(/[^/]*\{[^/]*/g, "{v}"))
        .filter((t) => !catalog.routes.some((r) => templateShape(r.template) === templateShape(t)))
        .map((t) => parseTemplate(t)),
    );

  app.use(async (req: Request, res: Response) => {
    const requestId = res.locals["requestId"] as string;
    try {
      if (req.path === "/login") {
        sendLogin(res, await login(req));
        return;
      }
      const caller = authenticate(req, verify);
      const verdict = opts.limiter.enabled ? await opts.limiter.hit(tokenKey(caller.token)) : undefined;
      if (verdict && !verdict.allowed) {
        throw new HttpError(429, "Too many requests for this token; slow down", [], { "Retry-After": String(verdict.retryAfter) });
      }
      res.locals["caller"] = caller;
      const method = req.method === "HEAD" ? "GET" : req.method;
      const path = req.path;
      if (path === "/events") {
        // A stream never ends, so HEAD (which never gets the body) is refused too.
        if (req.method !== "GET") throw new HttpError(405, `Method ${req.method} is not allowed on /events`, [], { Allow: "GET" });
        if (!negotiate(req.headers.accept, ["text/event-stream"])) throw notAcceptable(["text/event-stream"]);
        await feed.serve(req, res, caller.identity, baseUri(req));
        return;
      }
      if (path === "/") {
        if (method !== "GET") throw new HttpError(405, `Method ${req.method} is not allowed on /`, [], { Allow: "GET" });
        const type = negotiate(req.headers.accept, [ROOT_TYPE, JSON_TYPE]);
        if (!type) throw notAcceptable([ROOT_TYPE, JSON_TYPE]);
        send(res, 200, type, rootDocument(baseUri(req)));
        return;
      }
      const parts = splitPath(path);
      const { match, allowed } = parts ? router.match(method, parts) : { match: undefined, allowed: [] };
      if (!match) {
        if (allowed.length > 0) {
          throw new HttpError(405, `Method ${req.method} is not allowed on ${path}`, [], { Allow: allowed.join(", ") });
        }
        if (parts && unserved.some((segments) => bind(segments, parts))) {
          throw new HttpError(404, `${parts[0]} are not served by this API (${path}): only the kinds of the root document are`);
        }
        throw new HttpError(404, `There is no resource at ${path}`);
      }
      await dispatch(req, res, match, baseUri(req));
    } catch (err) {
      sendError(res, toHttpError(err, requestId, log), requestId);
    }
  });

  async function dispatch(req: Request, res: Response, { route, params, parts }: Match, base: string): Promise<void> {
    const { identity, token } = res.locals["caller"] as { identity: Identity; token: string };
    // Refusals that need no data are made here, without a hop; the service checks again.
    const access = rules.get(`${route.service}/${route.rpc}`);
    const denied = access && coarseDenial(access, identity);
    if (denied) throw denied;
    const offers = responseOffers(route);
    const responseType = offers.length > 0 ? negotiate(req.headers.accept, offers) : undefined;
    if (offers.length > 0 && !responseType) throw notAcceptable(offers);

    const request: Record<string, unknown> = {};
    for (const [name, raw] of Object.entries(params)) {
      // A path segment of the wrong type (a VLAN "abc") names nothing.
      const c = fromText(route.request.byName.get(name)!, raw);
      if (!c.ok) throw new HttpError(404, `There is no resource at ${req.path}`);
      request[name] = c.value;
    }
    const queryViolations: Violation[] = [];
    for (const [name, raw] of Object.entries(req.query)) {
      const field = route.queryFields.get(name);
      if (!field || typeof raw !== "string") continue;
      const c = fromText(field, raw);
      if (c.ok) request[name] = c.value;
      else queryViolations.push({ property: name, message: c.message });
    }
    if (queryViolations.length > 0) throw ApiError.invalid(queryViolations);

    if (route.bodyField) {
      request[route.bodyField.name] = await readJsonBody(req, route, parts, token);
    }
    const ifMatch = req.headers["if-match"];
    if (ifMatch && (route.method === "PUT" || route.method === "DELETE")) await checkIfMatch(route, parts, ifMatch, token);

    // A page of a list carries a Link header the cache does not keep: pages are not cached.
    const cacheable = route.shape.kind === "collection" && request["limit"] === undefined && request["marker"] === undefined;
    const cacheKind = route.shape.kind === "collection" ? route.shape.item.resource!.kind : "";
    // What a list holds depends on who asks: non-admins see their tenant's part only.
    // Bodies hold absolute links, so the base URI is part of the key too.
    const cacheKey = cacheable ? `${identity.role === "admin" ? "*" : `t:${identity.tenantId}`}|${base}${req.originalUrl}` : "";
    let fillToken: string | undefined;
    if (cacheable) {
      const found = await cache.get(cacheKind, cacheKey);
      if (found?.hit) {
        metrics.cacheHits++;
        send(res, 200, responseType!, found.body);
        return;
      }
      metrics.cacheMisses++;
      fillToken = found?.token;
    }

    const { response, changes } = await upstream.call(route.service, route.rpc, request, opts.callTimeoutMs, token);
    if (changes.length > 0) await cache.invalidate(catalog.affected(changes));

    switch (route.shape.kind) {
      case "empty":
        res.status(204).end();
        return;
      case "collection": {
        const item = route.shape.item;
        const items = (response[route.shape.field.name] as Record<string, unknown>[] | undefined) ?? [];
        const body = Buffer.from(`[${items.map((i) => toJson(item, i, base)).join(",")}]`);
        const next = response["next_marker"];
        if (typeof next === "string" && next !== "") {
          const url = new URL(req.originalUrl, base);
          url.searchParams.set("marker", next);
          res.setHeader("Link", `<${url.href}>; rel="next"`);
        }
        if (fillToken !== undefined) void cache.fill(cacheKind, cacheKey, body, fillToken);
        send(res, 200, responseType!, body);
        return;
      }
      case "item": {
        const item = route.shape.item;
        if (route.method === "POST") {
          const p = itemPath(item, response);
          if (p) res.setHeader("Location", base + p);
        }
        const etag = etagOf(item, response);
        res.setHeader("ETag", etag);
        const ifNoneMatch = req.headers["if-none-match"];
        if (route.method === "GET" && ifNoneMatch && etagMatches(ifNoneMatch, etag)) {
          res.status(304).end();
          return;
        }
        send(res, route.method === "POST" ? 201 : 200, responseType!, toJson(item, response, base));
      }
    }
  }

  /**
   * If-Match on a PUT or DELETE: the item as it is now must carry one of the tags, else 412.
   * The check reads the item just before the write; a write landing in between is not seen.
   */
  async function checkIfMatch(route: Route, parts: string[], header: string, token: string): Promise<void> {
    const get = router.getAt(templateShape(route.template));
    if (get?.shape.kind !== "item") return;
    const response = await callGet(get, parts, token);
    const etag = etagOf(get.shape.item, response);
    if (!etagMatches(header, etag)) {
      throw new HttpError(412, `The item has changed since it was read: its ETag is now ${etag}`, [], { ETag: etag });
    }
  }

  async function readJsonBody(req: Request, route: Route, parts: string[], token: string): Promise<unknown> {
    const bodyType = route.bodyField!.message!;
    const accepted = [vendor(bodyType.resource?.mediaType ?? ""), JSON_TYPE].map((t) => t.toLowerCase());
    const ct = essence(req.headers["content-type"]);
    if (!ct || !accepted.includes(ct)) {
      throw new HttpError(
        415,
        ct
          ? `Content-Type ${ct} is not supported here; send ${accepted.join(" or ")}`
          : `Content-Type is missing; send ${accepted.join(" or ")}`,
      );
    }
    const text = await readBodyText(req, opts.bodyLimit);
    let json: unknown;
    try {
      json = parseJson(text, bodyType.hasInt64);
    } catch (err) {
      throw new HttpError(400, `Request body is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      throw new HttpError(400, "Request body must be a JSON object");
    }
    const violations: Violation[] = [];
    const value = fromJson(bodyType, json as Record<string, unknown>, route.method === "PUT" ? "replace" : "create", violations);
    if (violations.length > 0) {
      // A missing target (or parent) is a 404 before its body is judged.
      await probeTarget(route, parts, token);
      throw ApiError.invalid(violations);
    }
    return value;
  }

  /**
   * Throws the 404 of the item a PUT targets, or of the nearest parent a POST creates under
   * (the closest shorter path that has a GET route).
   */
  async function probeTarget(route: Route, parts: string[], token: string): Promise<void> {
    let probe: Route | undefined;
    const segments = templateShape(route.template).split("/");
    for (let n = route.method === "PUT" ? segments.length : segments.length - 1; n > 1 && !probe; n--) {
      probe = router.getAt(segments.slice(0, n).join("/"));
    }
    if (!probe || probe === route) return;
    try {
      await callGet(probe, parts, token);
    } catch (err) {
      const e = ApiError.from(err);
      if (e.code === Code.NOT_FOUND) throw e;
    }
  }

  /** Calls a GET route with the path variables taken, by position, from `parts`. */
  async function callGet(get: Route, parts: string[], token: string): Promise<Record<string, unknown>> {
    const request: Record<string, unknown> = {};
    get.segments.forEach((s, i) => {
      if ("variable" in s) {
        const c = fromText(get.request.byName.get(s.variable)!, parts[i]!);
        request[s.variable] = c.ok ? c.value : parts[i];
      }
    });
    return (await upstream.call(get.service, get.rpc, request, opts.callTimeoutMs, token)).response;
  }

  // Anything express itself rejects still gets the error body, never its HTML page.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const requestId = (res.locals["requestId"] as string | undefined) ?? randomUUID();
    const status = (err as { status?: number } | null)?.status;
    const e =
      typeof status === "number" && status >= 400 && status < 500
        ? new HttpError(status, (err as Error).message || "Bad request")
        : toHttpError(err, requestId, log);
    sendError(res, e, requestId);
  });

  return { app, metrics };
}

function responseOffers(route: Route): string[] {
  switch (route.shape.kind) {
    case "empty":
      return [];
    case "collection":
      return [vendor(route.shape.item.resource!.collectionMediaType), JSON_TYPE];
    case "item":
      return [vendor(route.shape.item.resource!.mediaType), JSON_TYPE];
  }
}

function notAcceptable(offers: string[]): HttpError {
  return new HttpError(406, `None of the acceptable media types is available; this resource is served as ${offers.join(" or ")}`);
}

/** Splits and decodes a path; undefined when a segment does not decode. */
function splitPath(path: string): string[] | undefined {
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  try {
    return trimmed.slice(1).split("/").map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

function toHttpError(err: unknown, requestId: string, log: Logger): HttpError {
  if (err instanceof HttpError) return err;
  const e = ApiError.from(err);
  const status = HTTP_STATUS[e.code] ?? 500;
  if (status === 503 || status === 504) {
    return new HttpError(
      status,
      status === 503 ? "A backing service is unavailable; try again later" : "A backing service did not answer in time",
      [],
      { "Retry-After": "1" },
    );
  }
  if (status >= 500) {
    log.error("request failed", { requestId, err: e.cause ?? e });
    return new HttpError(500, `An internal error occurred (request ${requestId})`);
  }
  return new HttpError(status, e.message, e.violations);
}
