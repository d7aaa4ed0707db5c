// PATCH with a JSON Merge Patch (RFC 7396) on every item that has a PUT, in one call to its
// service: the patch's members are typed by the item's message as a PUT body is (the fields it
// may not set ignored, a required one not needed), the paths it sets and removes go with the call
// (PATCH_KEY), and the service merges them into the item as it locks it in the write's own
// transaction, then writes the result as that PUT (the same validation, events, audit record and
// cache invalidation). A client's If-Match is checked there too; no other write can land between
// the read the patch is merged into and the write.
import { patchPaths } from "@vnm/kit";
import { readBodyText } from "./body.ts";
import type { ApiRequest, ApiResponse, Gateway } from "./context.ts";
import { dispatch, parseJsonObject, type RoutePlan } from "./dispatch.ts";
import { EdgeError } from "./http-error.ts";
import { essence } from "./media.ts";
import type { Match } from "./router.ts";

export const MERGE_PATCH = "application/merge-patch+json";

/** PATCH on a route whose PUT is `match`/`plan`. */
export async function patchItem(gw: Gateway, req: ApiRequest, res: ApiResponse, match: Match, plan: RoutePlan, base: string): Promise<void> {
  const route = match.route;
  if (essence(req.headers["content-type"]) !== MERGE_PATCH) {
    const given = req.headers["content-type"] ? `Content-Type ${essence(req.headers["content-type"])} is` : "A PATCH without Content-Type is";
    throw EdgeError.unsupportedPatch(`${given} not supported; send a JSON Merge Patch (${MERGE_PATCH})`, [MERGE_PATCH]);
  }
  const item = route.bodyField!.message!;
  const patch = parseJsonObject(await readBodyText(req, gw.bodyLimit), item.hasInt64);
  return dispatch(gw, req, res, match, plan, base, { body: patch, paths: patchPaths(item, patch) });
}
