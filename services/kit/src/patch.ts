// A PATCH (RFC 7396's JSON Merge Patch) made in one call: the gateway types the patch's values by
// the item's message and names, in the call's metadata (PATCH_KEY), the paths it sets and the
// paths it removes (null); the service merges them into the item as it reads it inside the write's
// transaction, and the result is written as a PUT would be. A field holding free-form JSON (a
// trace's condition) merges member by member, as RFC 7396 merges any object.
import type { FieldInfo, MessageInfo } from "./catalog.ts";
import { ApiError } from "./errors.ts";
import { isJsonObject, jsonText, mergePatch, metadataJson, parseJson } from "./json.ts";
import { memberOf } from "./values.ts";

/** Metadata key of a PATCH call: its PatchPaths as JSON. */
export const PATCH_KEY = "vnm-patch";

/** What a merge patch names: the paths it sets (a message it names as an object too) and the paths it removes. */
export interface PatchPaths {
  set: string[][];
  unset: string[][];
}

type Obj = Record<string, unknown>;

/** The paths a merge patch names, following the item's message (members no field of it names are left out). */
export function patchPaths(m: MessageInfo, patch: Obj, at: string[] = [], out: PatchPaths = { set: [], unset: [] }): PatchPaths {
  for (const [name, v] of Object.entries(patch)) {
    const f = m.byName.get(name);
    if (!f || f.internal) continue;
    const path = [...at, name];
    if (v === null) out.unset.push(path);
    else {
      out.set.push(path);
      if (f.message && !f.repeated && isJsonObject(v)) patchPaths(f.message, v, path, out);
    }
  }
  return out;
}

/** A call's PatchPaths (PATCH_KEY), or undefined for a PUT; a malformed one is the caller's fault. */
export function readPatchPaths(raw: unknown): PatchPaths | undefined {
  if (raw === undefined) return undefined;
  const parsed = metadataJson(raw);
  const set = pathsOf(memberOf(parsed, "set"));
  const unset = pathsOf(memberOf(parsed, "unset"));
  if (!set || !unset) throw ApiError.badRequest("The call's patch paths are malformed");
  return { set, unset };
}

/** A list of field paths (each a non-empty list of names), or undefined when it is not one. */
function pathsOf(v: unknown): string[][] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: string[][] = [];
  for (const p of v) {
    if (!Array.isArray(p) || p.length === 0) return undefined;
    const names = p.filter((s): s is string => typeof s === "string");
    if (names.length !== p.length) return undefined;
    out.push(names);
  }
  return out;
}

/** The value a field takes when a patch sets it to its proto default (which the wire leaves out). */
function zeroOf(f: FieldInfo): unknown {
  if (f.repeated) return [];
  if (f.message) return {};
  if (f.type === "string") return f.jsonObject ? "{}" : "";
  if (f.type === "bool") return false;
  if (f.type === "enum") return f.enumValues?.[0];
  if (f.type.includes("64")) return "0";
  return 0;
}

/**
 * The item `current` (a message as its service answers it) with the patch's values (`patch`, the
 * same message as the gateway typed the patch) at `paths`.
 */
export function patchedMessage(m: MessageInfo, current: Obj, patch: Obj, paths: PatchPaths): Obj {
  const out: Obj = { ...current };
  // Objects along a path are copied before they change: `current` stays as it was.
  const walk = (path: string[], make: boolean): { msg: MessageInfo; at: Obj; from: Obj | undefined; field: FieldInfo } | undefined => {
    let msg = m;
    let at = out;
    let from: Obj | undefined = patch;
    for (const [i, name] of path.entries()) {
      const field = msg.byName.get(name);
      if (!field) return undefined;
      if (i === path.length - 1) return { msg, at, from, field };
      if (!field.message || field.repeated) return undefined;
      const inner = at[name];
      if (!isJsonObject(inner) && !make) return undefined;
      const copy: Obj = isJsonObject(inner) ? { ...inner } : {};
      at[name] = copy;
      at = copy;
      const inside: unknown = from?.[name];
      from = isJsonObject(inside) ? inside : undefined;
      msg = field.message;
    }
    return undefined;
  };
  for (const path of paths.unset) {
    const w = walk(path, false);
    if (w) delete w.at[w.field.name];
  }
  for (const path of paths.set) {
    const w = walk(path, true);
    if (!w) continue;
    const { at, from, field } = w;
    const given = from?.[field.name];
    if (field.message && !field.repeated) at[field.name] = isJsonObject(at[field.name]) ? at[field.name] : {};
    else if (field.jsonObject) {
      const stored = at[field.name];
      const before = typeof stored === "string" ? parseJson(stored, true) : {};
      at[field.name] = jsonText(mergePatch(before, parseJson(typeof given === "string" ? given : "{}", true)));
    } else at[field.name] = given ?? zeroOf(field);
  }
  return out;
}
