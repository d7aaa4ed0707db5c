// Path matching over the catalog's routes.
import { bind, type Catalog, type Route, type Segment } from "@vnm/kit";

export interface Match {
  route: Route;
  params: Record<string, string>;
  /** The decoded path segments. */
  parts: readonly string[];
}

const startKey = (size: number, first: string | undefined) => (first === undefined ? `${size}` : `${size}/${first}`);
/** A route's first segment when it is a literal; undefined when it is a variable (or there is none). */
const literalStart = (r: Route): string | undefined => {
  const first = r.segments[0];
  return first && "literal" in first ? first.literal : undefined;
};

/** Finds the route for a method and path; `allowed` lists the methods the path supports. */
export class Router {
  private readonly bySize = new Map<number, Route[]>();
  /** The routes that may match a path, by its length and first segment, in catalog order. */
  private readonly byStart = new Map<string, Route[]>();
  private readonly unservedLinks: Segment[][];

  constructor(catalog: Catalog) {
    this.unservedLinks = catalog.unserved;
    for (const r of catalog.routes) {
      const list = this.bySize.get(r.segments.length) ?? [];
      list.push(r);
      this.bySize.set(r.segments.length, list);
    }
    // A route whose first segment is a variable may match any first segment: it joins every list of its length.
    for (const [size, routes] of this.bySize) {
      const starts = new Set(routes.map(literalStart).filter((s) => s !== undefined));
      for (const start of starts) {
        this.byStart.set(startKey(size, start), routes.filter((r) => (literalStart(r) ?? start) === start));
      }
      const open = routes.filter((r) => literalStart(r) === undefined);
      if (open.length > 0) this.byStart.set(startKey(size, undefined), open);
    }
  }

  match(method: string, parts: readonly string[]): { match?: Match; allowed: string[] } {
    const candidates = this.byStart.get(startKey(parts.length, parts[0])) ?? this.byStart.get(startKey(parts.length, undefined));
    const allowed: string[] = [];
    if (!candidates) return { allowed };
    let found: Match | undefined;
    for (const route of candidates) {
      const params = bind(route.segments, parts);
      if (!params) continue;
      if (!allowed.includes(route.method)) allowed.push(route.method);
      if (!found && route.method === method) found = { route, params, parts };
    }
    return { match: found, allowed };
  }

  /** Whether the path is where a link leads to a kind this interface only references. */
  unserved(parts: readonly string[]): boolean {
    return this.unservedLinks.some((segments) => bind(segments, parts) !== undefined);
  }
}
