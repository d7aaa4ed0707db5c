// A write's conditions: If-Match and If-None-Match (RFC 9110, 13.1), which the gateway passes on
// with the write's one call (IF_MATCH_KEY, IF_NONE_MATCH_KEY) for the service to check against
// the item as it locks it, in the write's own transaction, with no read before it: of two writes
// naming the same tag, the later is refused.
import { ApiError } from "./errors.ts";
import { etagMatches } from "./etag.ts";
import type { CallContext } from "./service.ts";
import { IF_MATCH_KEY, IF_NONE_MATCH_KEY } from "./upstream.ts";

/**
 * Refuses the write (412, with the item's current tag) when its If-Match names no tag of the
 * item (strong comparison; "*" names any) or its If-None-Match names it (weak comparison).
 * `tag` gives the item's entity tag as its GET would answer now; it is worked out only when the
 * call carries a condition.
 */
export async function checkConditions(ctx: Pick<CallContext, "metadata"> | undefined, tag: () => string | Promise<string>): Promise<void> {
  const ifMatch = ctx?.metadata.get(IF_MATCH_KEY)[0];
  const ifNoneMatch = ctx?.metadata.get(IF_NONE_MATCH_KEY)[0];
  if (typeof ifMatch !== "string" && typeof ifNoneMatch !== "string") return;
  const etag = await tag();
  if (typeof ifMatch === "string" && !etagMatches(ifMatch, etag, "strong")) throw ApiError.changed(etag);
  if (typeof ifNoneMatch === "string" && etagMatches(ifNoneMatch, etag)) throw ApiError.exists(etag);
}
