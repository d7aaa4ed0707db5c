// Reads the gateway makes on its own behalf before a write: the target (or its parent) of a
// request whose body is refused, so that a missing item is a 404 before a 400. (A write's
// If-Match and If-None-Match are the service's, in the write's own transaction.)
import { status as Code } from "@grpc/grpc-js";
import { ApiError, bind, type Route, templateShape } from "@vnm/kit";
import type { Gateway } from "./context.ts";
import { fromText } from "./transcode.ts";

/** Calls a GET route with the path variables taken, by position, from `parts` (and `extra`). */
export async function callGet(gw: Gateway, get: Route, parts: readonly string[], token: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const request: Record<string, unknown> = { ...extra };
  for (const [name, text] of Object.entries(bind(get.segments, parts.slice(0, get.segments.length)) ?? {})) {
    const c = fromText(get.request.byName.get(name)!, text);
    request[name] = c.ok ? c.value : text;
  }
  return (await gw.upstream.call(get.service, get.rpc, request, gw.callTimeoutMs, token)).response;
}

/**
 * Throws the 404 of the item a PUT targets, or of the nearest parent a POST creates under
 * (the closest shorter path that has a GET route). A POST under a parent this API does not
 * serve (a router's routes) asks for the first item of the collection it posts to instead: the
 * service answers that list with the parent's 404.
 */
export async function probeTarget(gw: Gateway, route: Route, parts: readonly string[], token: string): Promise<void> {
  let probe: Route | undefined = gw.catalog.tree.above(route.template, route.method === "PUT")[0];
  let extra: Record<string, unknown> = {};
  const shape = templateShape(route.template);
  if (!probe && route.method === "POST" && shape.includes("{}")) {
    const list = gw.catalog.tree.getAt(shape);
    // Only a list that can be asked for one item: a probe never reads a whole collection.
    if (list?.shape.kind === "collection" && list.queryFields.has("limit")) {
      probe = list;
      extra = { limit: 1 };
    }
  }
  if (!probe || probe === route) return;
  try {
    await callGet(gw, probe, parts, token, extra);
  } catch (err) {
    const e = ApiError.from(err);
    if (e.code === Code.NOT_FOUND) throw e;
  }
}
