// Path matching over the catalog's routes.
import { type Route, type Segment, templateShape } from "@vnm/kit";

export interface Match {
  route: Route;
  params: Record<string, string>;
  /** The decoded path segments. */
  parts: string[];
}

/** The path variables of `parts` under a template's segments, or undefined when they do not fit. */
export function bind(segments: Segment[], parts: string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = segments[i]!;
    if ("literal" in seg) {
      if (seg.literal !== parts[i]) return undefined;
    } else params[seg.variable] = parts[i]!;
  }
  return params;
}

/** Finds the route for a method and path; `allowed` lists the methods the path supports. */
export class Router {
  private readonly bySize = new Map<number, Route[]>();

  constructor(routes: Route[]) {
    for (const r of routes) {
      const list = this.bySize.get(r.segments.length) ?? [];
      list.push(r);
      this.bySize.set(r.segments.length, list);
    }
  }

  match(method: string, parts: string[]): { match?: Match; allowed: string[] } {
    const candidates = this.bySize.get(parts.length);
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

  /** The GET route of a template shape (used to tell 404 from 400 on a bad body). */
  getAt(shape: string): Route | undefined {
    for (const list of this.bySize.values()) {
      const r = list.find((x) => x.method === "GET" && templateShape(x.template) === shape);
      if (r) return r;
    }
    return undefined;
  }
}
