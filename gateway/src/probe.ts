// Reads the gateway makes on its own behalf before a write: the target (or its parent) of a
// request whose body is refused, so that a missing item is a 404 before a 400; and the item a
// conditional PUT or DELETE names, for If-Match.
import { status as Code } from "@grpc/grpc-js";
import { ApiError, type Route, templateShape } from "@vnm/kit";
import type { Gateway } from "./context.ts";
import { etagMatches, etagOf, fromText } from "./transcode.ts";

/** Calls a GET route with the path variables taken, by position, from `parts`. */
export async function callGet(gw: Gateway, get: Route, parts: string[], token: string): Promise<Record<string, unknown>> {
  const request: Record<string, unknown> = {};
  get.segments.forEach((s, i) => {
    if ("variable" in s) {
      const c = fromText(get.request.byName.get(s.variable)!, parts[i]!);
      request[s.variable] = c.ok ? c.value : parts[i];
    }
  });
  return (await gw.upstream.call(get.service, get.rpc, request, gw.callTimeoutMs, token)).response;
}

/**
 * Throws the 404 of the item a PUT targets, or of the nearest parent a POST creates under
 * (the closest shorter path that has a GET route).
 */
export async function probeTarget(gw: Gateway, route: Route, parts: string[], token: string): Promise<void> {
  let probe: Route | undefined;
  const segments = templateShape(route.template).split("/");
  for (let n = route.method === "PUT" ? segments.length : segments.length - 1; n > 1 && !probe; n--) {
    probe = gw.router.getAt(segments.slice(0, n).join("/"));
  }
  if (!probe || probe === route) return;
  try {
    await callGet(gw, probe, parts, token);
  } catch (err) {
    const e = ApiError.from(err);
    if (e.code === Code.NOT_FOUND) throw e;
  }
}

/**
 * If-Match on a PUT or DELETE: the item as it is now must carry one of the tags, else 412.
 * The check reads the item just before the write; a write landing in between is not seen.
 */
export async function checkIfMatch(gw: Gateway, route: Route, parts: string[], header: string, token: string): Promise<void> {
  const get = gw.router.getAt(templateShape(route.template));
  if (get?.shape.kind !== "item") return;
  const response = await callGet(gw, get, parts, token);
  const etag = etagOf(get.shape.item, response);
  if (!etagMatches(header, etag)) {
    throw ApiError.http(412, `The item has changed since it was read: its ETag is now ${etag}`, [], { ETag: etag });
  }
}
