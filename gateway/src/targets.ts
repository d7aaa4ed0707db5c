// A request target (`/path?query`) and what follows from it alone: its path, its query (parsed as
// express's "simple" parser does), its decoded segments and the route each method comes to. A
// gateway is asked for the same few targets over and over (an item, a list), so each is worked
// out once and kept; what is kept is frozen, shared by every request for that target.
import { parse as parseQuery } from "node:querystring";
import { LRUCache } from "lru-cache";
import type { Match, Router } from "./router.ts";

/** A target longer than this is worked out for its own request only, never kept. */
const KEPT_CHARS = 512;
/**
 * How many targets are kept, the least recently asked for going first: a client spreading its
 * requests over ever new targets costs the gateway only the work those requests need anyway, and
 * the targets asked for again and again stay.
 */
const KEPT_TARGETS = 1024;

/** Where a method and path lead: the route that serves them, and every method the path takes. */
export interface Routed {
  match: Match | undefined;
  allowed: readonly string[];
}

const NOWHERE: Routed = Object.freeze({ match: undefined, allowed: Object.freeze([]) });
const NO_QUERY = Object.freeze({});

/** A query string's parameters, frozen with the lists of those given more than once. */
function frozenQuery(text: string): Readonly<Record<string, unknown>> {
  const query = parseQuery(text);
  for (const v of Object.values(query)) if (Array.isArray(v)) Object.freeze(v);
  return Object.freeze(query);
}

/** Splits and decodes a path; undefined when a segment does not decode. */
function splitPath(path: string): string[] | undefined {
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  const segments = trimmed.slice(1).split("/");
  // Only a percent sign makes a segment decode to something else (or fail to).
  if (!trimmed.includes("%")) return segments;
  try {
    return segments.map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

/** The route of `method` at `parts`; a PATCH comes to its item's PUT (patch.ts), so a path that takes PUT takes PATCH too. */
function routeOf(router: Router, method: string, parts: readonly string[]): Routed {
  const { match, allowed } = router.match(method === "PATCH" ? "PUT" : method, parts);
  if (allowed.includes("PUT")) allowed.splice(allowed.indexOf("PUT") + 1, 0, "PATCH");
  if (match) {
    Object.freeze(match.params);
    Object.freeze(match.parts);
    Object.freeze(match);
  }
  return Object.freeze({ match, allowed: Object.freeze(allowed) });
}

/** One request target: its path and query, its segments, and the route of each method asked for. */
export class Target {
  readonly path: string;
  readonly query: Readonly<Record<string, unknown>>;
  /** The decoded path segments; undefined when one does not decode. */
  readonly parts: readonly string[] | undefined;
  /** The route of each method asked for here (a method asked once, the router asked once). */
  private readonly routes = new Map<string, Routed>();

  constructor(path: string, query: Readonly<Record<string, unknown>>) {
    this.path = path;
    this.query = query;
    const parts = splitPath(path);
    this.parts = parts && Object.freeze(parts);
  }

  /** Where `method` leads here (HEAD is asked as GET by the caller). */
  route(method: string, router: Router): Routed {
    let r = this.routes.get(method);
    if (r === undefined) {
      r = this.parts ? routeOf(router, method, this.parts) : NOWHERE;
      this.routes.set(method, r);
    }
    return r;
  }
}

/** The targets a gateway has worked out, by their text as sent. */
export class Targets {
  private readonly kept = new LRUCache<string, Target>({ max: KEPT_TARGETS });

  /** The target of a request's URL, which starts with a single "/". */
  of(url: string): Target {
    let t = this.kept.get(url);
    if (t !== undefined) return t;
    const q = url.indexOf("?");
    t = new Target(q < 0 ? url : url.slice(0, q), q < 0 ? NO_QUERY : frozenQuery(url.slice(q + 1)));
    if (url.length <= KEPT_CHARS) this.kept.set(url, t);
    return t;
  }
}
