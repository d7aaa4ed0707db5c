// An empty list in a write's body, which its protobuf cannot carry: on the wire a repeated field
// holding nothing is the same as one left out. Where the two mean different things (a QoS
// policy's PUT with `"rules": []` deletes its rules, one without `rules` leaves them), the
// gateway names the body's top-level lists given empty in the call's metadata (EMPTY_LISTS_KEY),
// and the service puts them back before it reads the body.
import type { MessageInfo } from "./catalog.ts";
import { ApiError } from "./errors.ts";
import { metadataJson } from "./json.ts";
import { isRecord } from "./values.ts";

/** Metadata key of a write: the JSON array of its body's top-level repeated fields given as []. */
export const EMPTY_LISTS_KEY = "vnm-empty-lists";

/** The repeated fields of `m` that `body` (a write's body, typed by its message) gives as an empty list. */
export function emptyLists(m: MessageInfo, body: Record<string, unknown>): string[] {
  return m.fields
    .filter((f) => {
      const v = body[f.name];
      return f.repeated && !f.internal && Array.isArray(v) && v.length === 0;
    })
    .map((f) => f.name);
}

/**
 * `body` (a write's body as a gRPC peer decoded it) with an empty list in each repeated field of
 * `m` that the call's EMPTY_LISTS_KEY value (`raw`) names and the body leaves unset. A value
 * that is not a list of field names is the caller's fault (400); a name that is no repeated
 * field of `m` is ignored.
 */
export function withEmptyLists(m: MessageInfo, body: unknown, raw: unknown): unknown {
  if (raw === undefined) return body;
  const names = metadataJson(raw);
  if (!Array.isArray(names) || !names.every((n: unknown): n is string => typeof n === "string")) throw ApiError.badRequest("The call's empty lists are malformed");
  const out: Record<string, unknown> = isRecord(body) ? { ...body } : {};
  for (const name of names) {
    const f = m.byName.get(name);
    if (f?.repeated && !f.internal && out[name] === undefined) out[name] = [];
  }
  return out;
}
