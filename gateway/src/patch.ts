// PATCH with a JSON Merge Patch (RFC 7396) on every item that has a PUT: the item as it is now,
// in the representation a client reads, with the patch merged in, goes on as that PUT (the same
// validation, events, audit record and cache invalidation). The PUT is made only if the item
// still has the tag it was read with: the tag goes with the PUT as its If-Match, checked by the
// service in the write's own transaction; when another write came in between, the PATCH is made
// again on the new item (a few times), unless the client's own If-Match named the older one (412).
import { constants as H } from "node:http2";
import { etagMatches, etagOf, mergePatch, templateShape } from "@vnm/kit";
import { readBodyText } from "./body.ts";
import type { ApiRequest, ApiResponse, Gateway } from "./context.ts";
import { dispatch, parseJsonObject, type RoutePlan } from "./dispatch.ts";
import { EdgeError } from "./http-error.ts";
import { essence } from "./media.ts";
import { callGet } from "./probe.ts";
import type { Match } from "./router.ts";
import { parseJson, toJson } from "./transcode.ts";

export const MERGE_PATCH = "application/merge-patch+json";
/** How many times a PATCH is made again when the item changed between its read and its write. */
const ATTEMPTS = 3;

type Obj = Record<string, unknown>;

/** PATCH on a route whose PUT is `match`/`plan`. */
export async function patchItem(gw: Gateway, req: ApiRequest, res: ApiResponse, match: Match, plan: RoutePlan, base: string): Promise<void> {
  const route = match.route;
  if (essence(req.headers["content-type"]) !== MERGE_PATCH) {
    const given = req.headers["content-type"] ? `Content-Type ${essence(req.headers["content-type"])} is` : "A PATCH without Content-Type is";
    throw EdgeError.unsupportedPatch(`${given} not supported; send a JSON Merge Patch (${MERGE_PATCH})`, [MERGE_PATCH]);
  }
  const item = route.bodyField!.message!;
  const patch = parseJsonObject(await readBodyText(req, gw.bodyLimit), item.hasInt64);
  const get = gw.catalog.tree.getAt(templateShape(route.template))!;
  const { token } = res.locals.caller!;
  const clientTag = req.headers["if-match"];
  for (let attempt = 1; ; attempt++) {
    const current = await callGet(gw, get, match.parts, token);
    const etag = etagOf(current);
    if (clientTag !== undefined && !etagMatches(clientTag, etag, "strong")) {
      throw EdgeError.preconditionFailed(`The item has changed since it was read: its ETag is now ${etag}`, etag);
    }
    const now = parseJson(toJson(item, current, base), item.hasInt64) as Obj;
    const body = mergePatch(now, patch) as Obj;
    try {
      return await dispatch(gw, req, res, match, plan, base, { body, ifMatch: etag });
    } catch (err) {
      const changedMeanwhile = err instanceof EdgeError && err.status === H.HTTP_STATUS_PRECONDITION_FAILED;
      if (!changedMeanwhile || clientTag !== undefined || attempt >= ATTEMPTS) throw err;
      if (res.headersSent) throw err;
      res.removeHeader("Warning");
    }
  }
}
