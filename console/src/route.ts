// The console's own addresses, in the URL's fragment (the page itself is always /):
// #/list/<kind>[?<filters>], #/item/<kind>/<path>, #/new/<kind>[/<parent path>][?<field>=<value>],
// #/edit/<kind>/<path>, #/topology. A list's query keeps its filters and sort order (reload and
// back keep them); a new item's query gives fields their first values (a pool's loadBalancerId
// from its load balancer's page). Any other address is the not-found page.
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "home" }
  | { page: "topology" }
  | { page: "missing"; hash: string }
  | { page: "list"; kind: string; query?: string }
  | { page: "item"; kind: string; path: string }
  | { page: "new"; kind: string; parent?: string; query?: string }
  | { page: "edit"; kind: string; path: string };

export function parseRoute(hash: string): Route {
  const whole = hash.replace(/^#\/?/, "");
  const q = whole.indexOf("?");
  const query = q >= 0 ? whole.slice(q + 1) : undefined;
  const [page, kind, rest, ...more]: (string | undefined)[] = (q >= 0 ? whole.slice(0, q) : whole).split("/");
  const path = rest ? decodeURIComponent(rest) : undefined;
  const missing: Route = { page: "missing", hash };
  if (more.length > 0) return missing;
  if (page === "list" && kind && !path) return { page, kind, query };
  if ((page === "item" || page === "edit") && kind && path && query === undefined) return { page, kind, path };
  if (page === "new" && kind) return { page, kind, parent: path, query };
  if (page === "topology" && !kind) return { page };
  if (whole === "") return { page: "home" };
  return missing;
}

export function href(r: Route): string {
  switch (r.page) {
    case "home":
      return "#/";
    case "missing":
      return r.hash;
    case "topology":
      return "#/topology";
    case "list":
      return `#/list/${r.kind}${r.query ? `?${r.query}` : ""}`;
    case "item":
    case "edit":
      return `#/${r.page}/${r.kind}/${encodeURIComponent(r.path)}`;
    case "new":
      return `#/new/${r.kind}${r.parent ? `/${encodeURIComponent(r.parent)}` : ""}${r.query ? `?${r.query}` : ""}`;
  }
}

export function go(r: Route): void {
  location.hash = href(r);
}

/** Writes the list's query into the address without a new history entry (typing a filter is not a page of its own). */
export function replaceQuery(r: Route): void {
  const h = href(r);
  if (location.hash !== h) history.replaceState(history.state, "", h);
}

/** How many times the address changed by navigation (not by replaceQuery): a list page opened again starts from its address. */
let navigations = 0;
export function navigationCount(): number {
  return navigations;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => {
      navigations++;
      setRoute(parseRoute(location.hash));
    };
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}
