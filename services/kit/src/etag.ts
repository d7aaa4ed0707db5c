// Entity tags, computed where an item is answered (the gateway) and where it is written (a
// service checking If-Match in the write's own transaction): both hash the same message.
import { hash } from "node:crypto";

/**
 * The entity tag of an item: a hash of the message its service answered, as a gRPC peer decodes
 * it (keys in field order). The representation is made from that message alone (its links from
 * its fields and the base URI), so the tag changes whenever the representation does, and is the
 * same through every address the gateway is reached at.
 */
export function etagOf(obj: Record<string, unknown>): string {
  return `"${hash("sha256", JSON.stringify(obj), "base64url").slice(0, 22)}"`;
}

/**
 * Whether an If-Match / If-None-Match value names `etag` ("*" names any). Weak comparison (for
 * If-None-Match) ignores a tag's W/; strong comparison (for If-Match) never matches a weak tag.
 */
export function etagMatches(header: string, etag: string, comparison: "weak" | "strong" = "weak"): boolean {
  return header
    .split(",")
    .map((t) => t.trim())
    .some((t) => t === "*" || t === etag || (comparison === "weak" && t.startsWith("W/") && t.slice(2) === etag));
}
