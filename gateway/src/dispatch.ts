// One API request on a route of the catalog: access, negotiation, the gRPC request from the
// path, query and body, the collection cache, the call, and the answer.
import { constants as H } from "node:http2";
import { gzipSync } from "node:zlib";
import { type Access, ApiError, type Catalog, coarseDenial, DRY_RUN_KEY, EMPTY_LISTS_KEY, emptyLists, etagMatches, etagOf, type FieldInfo, type Identity, IF_MATCH_KEY, IF_NONE_MATCH_KEY, isRecord, itemPath, messageOf, PATCH_KEY, type PatchPaths, type Route, stringMember, type Violation } from "@vnm/kit";
import type { ApiRequest, ApiResponse } from "./context.ts";
import { readBodyText } from "./body.ts";
import { cacheKey, cacheKeyTail, cacheKeyWith } from "./cache.ts";
import type { Gateway } from "./context.ts";
import { EdgeError, send } from "./http-error.ts";
import { flowOf } from "./fair.ts";
import { perCopy } from "./kept.ts";
import { acceptsGzip, essence, JSON_TYPE, negotiate, vendor } from "./media.ts";
import { probeTarget } from "./probe.ts";
import type { Match } from "./router.ts";
import { arrayBody, filterItems, filterMetadata, listFilters, normalFilter, STREAM_PAGE, streamable, streamList } from "./lists.ts";
import { BASE_MARK, fromJson, fromText, isJsonObject, parseJson, toJson, unknownFields, withBase } from "./transcode.ts";

type Obj = Record<string, unknown>;

function responseOffers(route: Route): string[] {
  switch (route.shape.kind) {
    case "empty":
      return [];
    case "collection": {
      const r = route.shape.item.resource!;
      return [r.collectionMediaType, ...r.aliasCollectionMediaTypes].map(vendor).concat(JSON_TYPE);
    }
    case "item": {
      const r = route.shape.item.resource!;
      return [r.mediaType, ...r.aliasMediaTypes].map(vendor).concat(JSON_TYPE);
    }
  }
}

/** A whole collection's answer may be gzip-coded (from a cached copy), so it varies by Accept-Encoding too. */
const COLLECTION_VARY = "Accept, Accept-Encoding, Authorization, X-Auth-Token";
/** An item may be kept by the client and revalidated with its ETag. */
const ITEM_CACHE_CONTROL = "private, no-cache";
/** Smaller bodies are sent as they are: coding them saves less than it costs the client. */
const GZIP_MIN_BYTES = 1024;
/** The gzip coding of a cached body. */
const gzipped = perCopy((body) => gzipSync(body));

/**
 * What serving a route needs that no request changes, worked out once per route: its RPC's
 * name, access rule and media types, and the item cache slot of an item GET.
 */
export interface RoutePlan {
  /** "<service>/<rpc>": the access rule's key, and what the audit trail names. */
  rpc: string;
  access: Access | undefined;
  offers: string[];
  item: Omit<ItemSlot, "key"> | undefined;
  /** The filters a list takes from its query (none for other routes). */
  filters: Map<string, FieldInfo>;
}

export function routePlans(catalog: Catalog, rules: Map<string, Access>, itemCache: boolean): Map<Route, RoutePlan> {
  const plans = new Map<Route, RoutePlan>();
  for (const route of catalog.routes) {
    const rpc = `${route.service}/${route.rpc}`;
    plans.set(route, { rpc, access: rules.get(rpc), offers: responseOffers(route), item: itemCacheOf(catalog, route, itemCache), filters: listFilters(route) });
  }
  return plans;
}

/** Query parameters any route with a body reads besides its fields. */
const BODY_OPTIONS = new Set(["fieldValidation"]);

/**
 * The query parameter of a write's dry run, as Kubernetes names it: `?dryRun=All` makes the
 * write run every check and answer as it would, storing nothing (DRY_RUN_KEY, Store.tx).
 */
const DRY_RUN = "dryRun";
const DRY_RUN_VALUES = ["All"];

/** Whether a request is a write's dry run; its value was checked by `requestOf`. */
const isDryRun = (route: Route, req: ApiRequest): boolean => route.method !== "GET" && req.query[DRY_RUN] !== undefined;

/** What a request asks of its RPC: the request message, and a list's field filters in name order. */
interface Asked {
  request: Obj;
  filters: [string, unknown][];
}

/**
 * The gRPC request from the path variables (a segment of the wrong type names nothing) and the
 * query: a request field, a list's filter, or an option of the route; anything else is a 400
 * naming it (a parameter the answer would not depend on is a mistake worth telling).
 */
function requestOf({ route, params }: Match, req: ApiRequest, plan: RoutePlan): Asked {
  const request: Obj = {};
  for (const [name, raw] of Object.entries(params)) {
    const c = fromText(route.request.byName.get(name)!, raw);
    if (!c.ok) throw EdgeError.notFound(`There is no resource at ${req.path}`);
    request[name] = c.value;
  }
  const violations: Violation[] = [];
  const filters: [string, unknown][] = [];
  for (const [name, raw] of Object.entries(req.query)) {
    const field = route.queryFields.get(name);
    const filter = field ? undefined : plan.filters.get(name);
    if (!field && !filter) {
      if (name === DRY_RUN && route.method !== "GET") {
        if (typeof raw !== "string") violations.push({ property: name, message: "may be given once" });
        else if (!DRY_RUN_VALUES.includes(raw)) violations.push({ property: name, message: `must be ${DRY_RUN_VALUES.join(" or ")}` });
      } else if (!(route.bodyField && BODY_OPTIONS.has(name))) violations.push({ property: name, message: "is not a parameter of this request" });
      continue;
    }
    // A filter or a page given twice has no one meaning: refused, never dropped (a list
    // answered unfiltered, or whole, is not what was asked for).
    if (typeof raw !== "string") {
      violations.push({ property: name, message: "may be given once" });
      continue;
    }
    const c = fromText((field ?? filter)!, raw);
    if (!c.ok) violations.push({ property: name, message: c.message });
    // A value the field may not hold matches nothing: a mistake worth telling, as the document says.
    else if (filter?.values && !filter.values.includes(raw)) violations.push({ property: name, message: `must be one of ${filter.values.join(", ")}` });
    else if (field) request[name] = c.value;
    else filters.push([name, normalFilter(typeof c.value === "bigint" ? String(c.value) : c.value)]);
  }
  if (violations.length > 0) throw ApiError.invalid(violations);
  return { request, filters: filters.sort(([a], [b]) => (a < b ? -1 : 1)) };
}

/** The request's body: JSON of the body field's message (or its vendor type), a JSON object. */
async function readJsonObject(gw: Gateway, req: ApiRequest, route: Route): Promise<Obj> {
  const bodyType = route.bodyField!.message!;
  const names = bodyType.resource ? [bodyType.resource.mediaType, ...bodyType.resource.aliasMediaTypes] : [""];
  const accepted = [...names.map(vendor), JSON_TYPE].map((t) => t.toLowerCase());
  const ct = essence(req.headers["content-type"]);
  if (!ct || !accepted.includes(ct)) {
    const send = `send ${accepted.join(" or ")}`;
    throw EdgeError.unsupportedMediaType(ct ? `Content-Type ${ct} is not supported here; ${send}` : `Content-Type is missing; ${send}`);
  }
  return parseJsonObject(await readBodyText(req, gw.bodyLimit), bodyType.hasInt64);
}

/** A body's text as a JSON object (400 otherwise); numbers a double cannot hold kept as written. */
export function parseJsonObject(text: string, lossless: boolean): Obj {
  let json: unknown;
  try {
    json = parseJson(text, lossless);
  } catch (err) {
    throw EdgeError.badRequest(`Request body is not valid JSON: ${messageOf(err)}`);
  }
  if (!isJsonObject(json)) throw EdgeError.badRequest("Request body must be a JSON object");
  return json;
}

/**
 * The JSON body of a POST or PUT (read from the request, or `given`: a PATCH's merged
 * representation), type-checked against the proto (404 before 400 for a missing target).
 */
async function readJsonBody(gw: Gateway, req: ApiRequest, res: ApiResponse, { route, parts }: Match, token: string, given?: Obj): Promise<{ value: unknown; empty: string[] }> {
  const bodyType = route.bodyField!.message!;
  const json = given ?? (await readJsonObject(gw, req, route));
  const violations: Violation[] = [];
  const value = fromJson(bodyType, json, given ? "patch" : route.method === "PUT" ? "replace" : "create", violations);
  const mode = fieldValidation(req);
  const unknown = mode === "Ignore" ? [] : unknownFields(bodyType, json);
  if (mode === "Strict") for (const property of unknown) violations.push({ property, message: "is not a field of this resource" });
  if (violations.length > 0) {
    await probeTarget(gw, route, parts, token);
    throw ApiError.invalid(violations);
  }
  if (mode === "Warn" && unknown.length > 0) res.setHeader("Warning", unknownFieldWarnings(unknown));
  // Named from the typed body: only the lists this write may set (fromJson left out the rest).
  return { value, empty: emptyLists(bodyType, value) };
}

const FIELD_VALIDATION = ["Ignore", "Warn", "Strict"] as const;

/**
 * What to do with a body's unknown fields (?fieldValidation=, as Kubernetes names it): ignore
 * them silently, ignore them and say so in Warning headers (the default), or refuse the body.
 */
function fieldValidation(req: ApiRequest): (typeof FIELD_VALIDATION)[number] {
  const raw = req.query["fieldValidation"];
  if (raw === undefined) return "Warn";
  const mode = FIELD_VALIDATION.find((m) => m === raw);
  if (!mode) throw ApiError.invalid([{ property: "fieldValidation", message: `must be one of ${FIELD_VALIDATION.join(", ")}` }]);
  return mode;
}

/** Warning headers (RFC 9111's 299) naming unknown fields: at most 10, names quoted and escaped to ASCII. */
function unknownFieldWarnings(fields: string[]): string[] {
  const quoted = (name: string) =>
    JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}...` : name)
      .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
      .replace(/\\/g, "\\\\")
      .replace(/"/g, '\\"');
  const shown = fields.slice(0, 10).map((f) => `299 - "unknown field ${quoted(f)}"`);
  if (fields.length > 10) shown.push(`299 - "${fields.length - 10} more unknown fields"`);
  return shown;
}

/** The parameters a route read from path and query, in name order (int64s as their digits), for a cache key. */
function readParams(request: Obj): [string, unknown][] {
  return Object.keys(request)
    .sort()
    .map((k) => [k, typeof request[k] === "bigint" ? String(request[k]) : request[k]]);
}

/** A whole collection GET's cache key but for who asks, and the kind it holds (see `listSlot`). */
type ListBase = { kind: string; tail: string };

/** The cache slot of a whole collection GET. */
type ListSlot = { kind: string; key: string };

/**
 * The part of a whole collection GET's cache slot that does not depend on who asks (pages are
 * not cached: their Link header is not kept). The key holds only what changes the answer, as the
 * gateway read and typed it: who asks (a list depends on it), the route, the parameters it read
 * and its filters, in an unambiguous encoding. No client text goes in as sent: kept bodies hold
 * BASE_MARK where their links' base goes, so the Host header is no part of the key.
 */
function listBase(route: Route, { request, filters }: Asked): ListBase | undefined {
  if (route.shape.kind !== "collection" || request["limit"] !== undefined || request["marker"] !== undefined) return undefined;
  return { kind: route.shape.item.resource!.kind, tail: cacheKeyTail(route.template, readParams(request), filters) };
}

/** Every administrator sees the same lists; anyone else, their tenant's. */
const ADMINS = "*";
const scopeOf = (identity: Identity): string => (identity.role === "admin" ? ADMINS : `t:${identity.tenantId}`);

/** A list's cache slot for those of scope `who`. */
function listSlot(base: ListBase | undefined, who: string): ListSlot | undefined {
  return base && { kind: base.kind, key: cacheKeyWith(who, base.tail) };
}

/**
 * What a body-less request reads from a route's path and query (its request message and
 * filters, frozen: every request for the target shares them) and the cache slots that follow,
 * worked out on the first request of a target and kept with its route's match (targets.ts
 * keeps the match). Nothing is kept per caller: a list's key is made for each from its base.
 */
class Reading {
  readonly asked: Asked;
  readonly item: ItemSlot | undefined;
  private readonly list: ListBase | undefined;
  /** Every administrator's list slot (they all see the same list). */
  private readonly adminSlot: ListSlot | undefined;

  constructor(match: Match, req: ApiRequest, plan: RoutePlan) {
    const route = match.route;
    const asked = requestOf(match, req, plan);
    Object.freeze(asked.request);
    for (const f of asked.filters) Object.freeze(f);
    this.asked = Object.freeze({ request: asked.request, filters: Object.freeze(asked.filters) as [string, unknown][] });
    const item = itemSlot(plan, route, asked.request);
    this.item = item && Object.freeze(item);
    this.list = listBase(route, this.asked);
    const slot = listSlot(this.list, ADMINS);
    this.adminSlot = slot && Object.freeze(slot);
  }

  slot(identity: Identity): ListSlot | undefined {
    const who = scopeOf(identity);
    return who === ADMINS ? this.adminSlot : listSlot(this.list, who);
  }
}

const readings = new WeakMap<Match, Reading>();

/** The reading of a match, worked out once (a request the reading refuses is refused each time: nothing is kept). */
function readingOf(match: Match, req: ApiRequest, plan: RoutePlan): Reading {
  let r = readings.get(match);
  if (r === undefined) {
    r = new Reading(match, req, plan);
    readings.set(match, r);
  }
  return r;
}

/** An item GET served from the cache: the entity tag and the owner's tenant travel with the body. */
interface ItemSlot {
  kind: string;
  key: string;
  tenantField: string | undefined;
  adminOnly: boolean;
}

/**
 * Whether an item GET route's answers are cached: the route is a kind's own get RPC, and the
 * gateway can apply its visibility rule itself (the item carries its tenant, or only
 * administrators see the kind). Kinds owned through a parent are always asked of their service.
 */
function itemCacheOf(catalog: Catalog, route: Route, itemCache: boolean): Omit<ItemSlot, "key"> | undefined {
  if (!itemCache || route.method !== "GET" || route.shape.kind !== "item") return undefined;
  const info = catalog.kinds.get(route.shape.item.resource!.kind);
  if (!info || info.service !== route.service || info.rpcs.get !== route.rpc || info.tenancy === "parent") return undefined;
  return { kind: info.kind, tenantField: info.resource.tenantField, adminOnly: info.tenancy === "admin" };
}

/** The cache slot of an item GET whose route's answers are cached. */
function itemSlot(plan: RoutePlan, route: Route, request: Obj): ItemSlot | undefined {
  return plan.item && { ...plan.item, key: cacheKey("item", route.template, readParams(request)) };
}

/** A cached item as stored: `<etag>\n<tenant>\n<body>`. */
function packItem(etag: string, tenant: string, body: string): Buffer {
  return Buffer.from(`${etag}\n${tenant}\n${body}`);
}

/** The parts of a cached item. */
const unpackItem = perCopy((b): { etag: string; tenant: string; body: Buffer } => {
  const i = b.indexOf(10);
  const j = b.indexOf(10, i + 1);
  return { etag: b.toString("latin1", 0, i), tenant: b.toString("utf8", i + 1, j), body: b.subarray(j + 1) };
});

/** Answers an item GET from the cache when it holds the item and `identity` may see it; false otherwise. */
async function cachedItem(gw: Gateway, req: ApiRequest, res: ApiResponse, slot: ItemSlot, identity: Identity, type: string, base: string): Promise<{ hit: false; token: string } | undefined | true> {
  const found = await gw.cache.get(slot.kind, slot.key);
  if (!found?.hit) return found;
  // Not visible: the service gives the very answer a missing item gets.
  return answerItem(gw, req, res, slot, identity, type, base, found.body, found.kept) || undefined;
}

/** Answers an item GET with a cached copy (`kept` when this gateway keeps it) when `identity` may see the item (true). */
function answerItem(gw: Gateway, req: ApiRequest, res: ApiResponse, slot: ItemSlot, identity: Identity, type: string, base: string, copy: Buffer, kept: boolean): boolean {
  const item = unpackItem(copy);
  const visible = identity.role === "admin" || (!slot.adminOnly && slot.tenantField !== undefined && item.tenant === identity.tenantId);
  if (!visible) return false;
  gw.metrics.cacheHits.inc();
  const headers = ["ETag", item.etag, "Cache-Control", ITEM_CACHE_CONTROL];
  const ifNoneMatch = req.headers["if-none-match"];
  if (ifNoneMatch && etagMatches(ifNoneMatch, item.etag)) {
    res.writeHead(H.HTTP_STATUS_NOT_MODIFIED, headers);
    res.end();
  } else send(res, H.HTTP_STATUS_OK, type, withBase(item.body, base), headers, kept);
  return true;
}

/** What a PATCH hands on as its PUT: the patch's members, and the paths it sets and removes (the service merges them). */
export interface Replacement {
  body: Obj;
  paths: PatchPaths;
}

export async function dispatch(gw: Gateway, req: ApiRequest, res: ApiResponse, match: Match, plan: RoutePlan, base: string, replacement?: Replacement): Promise<void> {
  const { route } = match;
  res.locals.route = route.template;
  const { identity, token } = res.locals.caller!;
  // Refusals that need no data are made here, without a hop; the service checks again.
  const denied = plan.access && coarseDenial(plan.access, identity);
  if (denied) throw denied;
  const offers = plan.offers;
  const type = offers.length > 0 ? negotiate(req.headers.accept, offers) : undefined;
  if (offers.length > 0 && !type) throw EdgeError.notAcceptable(offers);

  // What a body-less request reads from its target is the same each time the target comes again.
  const reading = route.bodyField ? undefined : readingOf(match, req, plan);
  const asked = reading?.asked ?? requestOf(match, req, plan);
  const request = asked.request;
  // The body's lists given empty, which its protobuf cannot carry (EMPTY_LISTS_KEY).
  let empty: string[] = [];
  // A write whose tenant's share of the service is full is refused before its body is read.
  if (route.bodyField) {
    gw.seats.refuseIfFull(route.domain, flowOf(identity));
    ({ value: request[route.bodyField.name], empty } = await readJsonBody(gw, req, res, match, token, replacement?.body));
  }
  const { "if-match": ifMatch, "if-none-match": ifNoneMatch } = req.headers;
  const conditional = route.method === "PUT" || route.method === "DELETE";
  const slot = reading ? reading.slot(identity) : listSlot(listBase(route, asked), scopeOf(identity));
  const item = slot ? undefined : reading ? reading.item : itemSlot(plan, route, request);
  if (answeredNow(gw, req, res, type!, base, identity, slot, item)) return;
  const fillToken = await fromCache(gw, req, res, type!, base, identity, slot, item);
  if (fillToken === true) return;
  // A write's conditions (and a PATCH's paths) go with its one call: the service checks them
  // against the item as it locks it in the write's own transaction, with no read before.
  const dryRun = isDryRun(route, req);
  res.locals.dryRun = dryRun;
  const extra = {
    ...filterMetadata(asked.filters),
    ...(dryRun ? { [DRY_RUN_KEY]: "All" } : {}),
    ...(ifMatch && conditional ? { [IF_MATCH_KEY]: ifMatch } : {}),
    ...(ifNoneMatch && conditional ? { [IF_NONE_MATCH_KEY]: ifNoneMatch } : {}),
    ...(replacement ? { [PATCH_KEY]: JSON.stringify(replacement.paths) } : {}),
    ...(empty.length > 0 ? { [EMPTY_LISTS_KEY]: JSON.stringify(empty) } : {}),
  };
  // Each call to the service in a seat of the caller's tenant (fair.ts): its share, never more
  // while others wait. Worked out only here: a cache hit has been answered already.
  const flow = flowOf(identity);
  const call = (r: Obj) => gw.seats.run(route.domain, flow, res, () => gw.upstream.call(route.service, route.rpc, r, gw.callTimeoutMs, token, res.locals.requestId, extra)).catch(preconditionFailed);
  const whole = streamable(route, request);
  const { response, changes, filtered } = await call(whole ? { ...request, limit: STREAM_PAGE } : request);
  // A dry run changed nothing (its service names no change either): the caches stay.
  if (changes.length > 0 && !dryRun) await gw.cache.invalidate(gw.catalog.affected(changes));
  if (route.shape.kind === "empty") {
    res.statusCode = H.HTTP_STATUS_NO_CONTENT;
    res.end();
    return;
  }
  if (route.shape.kind === "item") {
    const answer = respondItem(req, res, route, response, type!, base, item !== undefined && fillToken !== undefined);
    if (item && answer && fillToken !== undefined) {
      const tenant = item.tenantField ? String(response[item.tenantField] ?? "") : "";
      void gw.cache.fill(item.kind, item.key, packItem(answer.etag, tenant, answer.body), fillToken);
    }
    return;
  }
  await answerList(req, res, { route, type: type!, base, asked, whole, call, first: response, filtered }, slot && fillToken !== undefined ? (body) => void gw.cache.fill(slot.kind, slot.key, body, fillToken) : undefined);
}

/**
 * Answers from a copy this gateway holds and knows to be current, within the turn the request
 * came in (true): no await between the request and its answer. False: fromCache decides.
 */
function answeredNow(gw: Gateway, req: ApiRequest, res: ApiResponse, type: string, base: string, identity: Identity, slot: ListSlot | undefined, item: ItemSlot | undefined): boolean {
  if (item) {
    const copy = gw.cache.peek(item.kind, item.key);
    return copy !== undefined && answerItem(gw, req, res, item, identity, type, base, copy, true);
  }
  const copy = slot && gw.cache.peek(slot.kind, slot.key);
  if (copy === undefined) return false;
  sendCachedList(gw, req, res, type, withBase(copy, base), true);
  return true;
}

/**
 * Answers from the cache when it holds the answer (true); otherwise the token a miss gives to
 * fill it with (undefined when the cache is not to be filled).
 */
async function fromCache(gw: Gateway, req: ApiRequest, res: ApiResponse, type: string, base: string, identity: Identity, slot: ListSlot | undefined, item: ItemSlot | undefined): Promise<true | string | undefined> {
  if (item) {
    const found = await cachedItem(gw, req, res, item, identity, type, base);
    if (found === true) return true;
    if (found) gw.metrics.cacheMisses.inc();
    return found?.token;
  }
  if (!slot) return undefined;
  const found = await gw.cache.get(slot.kind, slot.key);
  if (found?.hit) {
    sendCachedList(gw, req, res, type, withBase(found.body, base), found.kept);
    return true;
  }
  res.setHeader("Vary", COLLECTION_VARY);
  gw.metrics.cacheMisses.inc();
  return found?.token;
}

/** A list call's answer and what produced it. */
interface ListAnswer {
  route: Route;
  type: string;
  base: string;
  asked: Asked;
  /** Whether the client asked for the whole list (then read a page at a time). */
  whole: boolean;
  call: (request: Obj) => Promise<{ response: Obj }>;
  first: Obj;
  filtered: boolean;
}

/**
 * A list's answer: streamed when the client asked for the whole list and it is longer than a
 * page; otherwise at once, kept in the cache (by `keep`) with BASE_MARK for its links' base.
 */
async function answerList(req: ApiRequest, res: ApiResponse, a: ListAnswer, keep?: (body: Buffer) => void): Promise<void> {
  const { route, asked, whole, base } = a;
  if (route.shape.kind !== "collection") throw new Error("not a collection route");
  const field = route.shape.field.name;
  const itemsOf = (r: Obj) => {
    const listed = r[field];
    const items: Obj[] = Array.isArray(listed) && listed.every(isRecord) ? listed : [];
    return a.filtered ? items : filterItems(items, asked.filters);
  };
  const items = itemsOf(a.first);
  const next = a.first["next_marker"];
  if (whole && typeof next === "string" && next !== "") {
    return streamList(req, res, route, a.type, base, items, next, async (marker) => {
      const page = (await a.call({ ...asked.request, limit: STREAM_PAGE, marker })).response;
      return { items: itemsOf(page), next: stringMember(page, "next_marker") || undefined };
    });
  }
  if (!whole) linkNext(req, res, next, base);
  const body = arrayBody(route.shape.item, items, keep ? BASE_MARK : base);
  keep?.(body);
  send(res, H.HTTP_STATUS_OK, a.type, keep ? withBase(body, base) : body);
}

/** A service's refusal of an If-Match as the 412 it is, with the item's current tag. */
function preconditionFailed(err: unknown): never {
  const e = ApiError.from(err);
  throw e.etag !== undefined ? EdgeError.preconditionFailed(e.message, e.etag) : err;
}

/** A whole list from the cache; gzip-coded when the client takes it and the copy is kept here. */
function sendCachedList(gw: Gateway, req: ApiRequest, res: ApiResponse, type: string, body: Buffer, kept: boolean): void {
  gw.metrics.cacheHits.inc();
  if (kept && body.length >= GZIP_MIN_BYTES && acceptsGzip(req.headers["accept-encoding"])) {
    send(res, H.HTTP_STATUS_OK, type, gzipped(body), ["Vary", COLLECTION_VARY, "Content-Encoding", "gzip"], true);
  } else send(res, H.HTTP_STATUS_OK, type, body, ["Vary", COLLECTION_VARY], kept);
}

/** The Link header to a page's next page, while more items follow. */
function linkNext(req: ApiRequest, res: ApiResponse, next: unknown, base: string): void {
  if (typeof next !== "string" || next === "") return;
  const url = new URL(req.originalUrl, base);
  url.searchParams.set("marker", next);
  res.setHeader("Link", `<${url.href}>; rel="next"`);
}

/** Sends an item; returns its entity tag and body (undefined for a 304). */
function respondItem(req: ApiRequest, res: ApiResponse, route: Route, response: Obj, type: string, base: string, keep: boolean): { etag: string; body: string } | undefined {
  if (route.shape.kind !== "item") throw new Error("not an item route");
  const item = route.shape.item;
  // Written with the answer as one flat list: a setHeader puts every header of the answer
  // through Node's slow path (app.ts, the edge's writeHead).
  const headers: string[] = [];
  if (route.method === "POST") {
    const answered = itemPath(item, response);
    // A POST below the item it answers (a port's /link) made what its path names: the Location
    // is that path, under the item's (topology.md §3: "<port uri>/link").
    const below = answered !== undefined && req.path.toLowerCase().startsWith(`${answered.toLowerCase()}/`);
    const p = below ? answered + req.path.slice(answered.length).replace(/\/+$/, "") : answered;
    if (p) {
      headers.push("Location", base + p);
      // The audit record names the new item by this path (no need to parse the Location back).
      res.locals.created = p;
    }
  }
  const etag = etagOf(response);
  headers.push("ETag", etag);
  if (route.method === "GET") headers.push("Cache-Control", ITEM_CACHE_CONTROL);
  const ifNoneMatch = req.headers["if-none-match"];
  if (route.method === "GET" && ifNoneMatch && etagMatches(ifNoneMatch, etag)) {
    res.writeHead(H.HTTP_STATUS_NOT_MODIFIED, headers);
    res.end();
    return undefined;
  }
  // A body to keep is written with BASE_MARK for its base, which the copy sent gets back.
  const body = toJson(item, response, keep ? BASE_MARK : base);
  send(res, route.method === "POST" ? H.HTTP_STATUS_CREATED : H.HTTP_STATUS_OK, type, keep ? withBase(Buffer.from(body), base) : body, headers);
  return { etag, body };
}
