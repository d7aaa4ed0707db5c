// The console's own addresses, in the URL's fragment (the page itself is always /):
// #/list/<kind>, #/item/<kind>/<path>, #/new/<kind>[/<parent path>], #/edit/<kind>/<path>,
// #/topology.
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "home" }
  | { page: "topology" }
  | { page: "list"; kind: string }
  | { page: "item"; kind: string; path: string }
  | { page: "new"; kind: string; parent?: string }
  | { page: "edit"; kind: string; path: string };

export function parseRoute(hash: string): Route {
  const [page, kind, rest]: (string | undefined)[] = hash.replace(/^#\/?/, "").split("/");
  const path = rest ? decodeURIComponent(rest) : undefined;
  if (page === "list" && kind) return { page, kind };
  if ((page === "item" || page === "edit") && kind && path) return { page, kind, path };
  if (page === "new" && kind) return { page, kind, parent: path };
  if (page === "topology") return { page };
  return { page: "home" };
}

export function href(r: Route): string {
  switch (r.page) {
    case "home":
      return "#/";
    case "topology":
      return "#/topology";
    case "list":
      return `#/list/${r.kind}`;
    case "item":
    case "edit":
      return `#/${r.page}/${r.kind}/${encodeURIComponent(r.path)}`;
    case "new":
      return `#/new/${r.kind}${r.parent ? `/${encodeURIComponent(r.parent)}` : ""}`;
  }
}

export function go(r: Route): void {
  location.hash = href(r);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}
