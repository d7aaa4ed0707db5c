// Reads the gateway makes on its own behalf before a write: the target (or its parent) of a
// request whose body is refused, so that a missing item is a 404 before a 400; and the item a
// conditional PUT or DELETE names, for If-Match and If-None-Match.
import { status as Code } from "@grpc/grpc-js";
import { ApiError, bind, etagMatches, etagOf, type Route, templateShape } from "@vnm/kit";
import type { Gateway } from "./context.ts";
import { EdgeError } from "./http-error.ts";
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

/**
 * If-Match and If-None-Match on a PUT or DELETE (RFC 9110, 13.1): the item as it is now must
 * carry one of If-Match's tags, compared strongly (a weak tag never matches), and none of
 * If-None-Match's ("*": any item), else 412. The check reads the item just before the write,
 * sparing the service a write that would fail; If-Match is checked again by the service in the
 * write's own transaction, where a write landing in between is seen.
 */
export async function checkConditions(gw: Gateway, route: Route, parts: readonly string[], ifMatch: string | undefined, ifNoneMatch: string | undefined, token: string): Promise<void> {
  const get = gw.catalog.tree.getAt(templateShape(route.template));
  if (get?.shape.kind !== "item") return;
  const response = await callGet(gw, get, parts, token);
  const etag = etagOf(response);
  if (ifMatch !== undefined && !etagMatches(ifMatch, etag, "strong")) {
    throw EdgeError.preconditionFailed(`The item has changed since it was read: its ETag is now ${etag}`, etag);
  }
  if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, etag)) {
    throw EdgeError.preconditionFailed(`The item exists and If-None-Match names it: its ETag is ${etag}`, etag);
  }
}
