// JSON as a client wrote it: numbers a double cannot hold exactly kept as their source text, and
// written back with the same digits; and RFC 7396's JSON Merge Patch over such values. The gateway
// reads bodies with these; a service merges a PATCH into an item with them.

/** A JSON number kept as its source text (integers beyond 2^53 stay exact). */
export class LosslessNumber {
  readonly source: string;
  constructor(source: string) {
    this.source = source;
  }
}

/**
 * JSON.parse that keeps as its source text (LosslessNumber) every number a double may not hold
 * as written: beyond 2^53 in magnitude when `lossless` (a double cannot tell 9007199254740993
 * from ...992, nor ...993.5 from ...994), and a whole double written with a fraction or an
 * exponent (`1.0000000000000001` and `1e-400` are not integers, though their doubles are).
 */
export function parseJson(text: string, lossless: boolean): unknown {
  // Only a number with a fraction or an exponent has a digit right before "." or "e".
  if (!lossless && !/\d[.eE]/.test(text)) return JSON.parse(text);
  return JSON.parse(text, (_key, value, context?: { source?: string }) => {
    if (typeof value !== "number" || !context?.source) return value;
    const wide = !(Math.abs(value) <= Number.MAX_SAFE_INTEGER);
    return (lossless && wide) || (Number.isInteger(value) && !/^-?\d+$/.test(context.source)) ? new LosslessNumber(context.source) : value;
  });
}

/** A metadata value as the JSON it should hold; undefined when it is no string or no JSON. */
export function metadataJson(raw: unknown): unknown {
  if (typeof raw !== "string") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** A JSON value as text: numbers kept as source text keep their digits (JSON.rawJSON), keys their order. */
export function jsonText(v: unknown): string {
  const raw = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
  return JSON.stringify(v, (_k, x) => (x instanceof LosslessNumber ? raw(x.source) : x));
}

/** Whether a value parsed from JSON is an object (not an array, not a number kept as text). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof LosslessNumber);
}

type Obj = Record<string, unknown>;

/**
 * RFC 7396's MergePatch: members of the patch replace the target's, null removes one, objects
 * merge member by member. (Written here: the npm implementation takes any object in a patch,
 * such as exact large numbers, for one to merge into.) Iterative: a client's patch may nest as
 * deep as the body limit allows, deeper than the call stack goes.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return patch;
  const merged: Obj = isJsonObject(target) ? { ...target } : {};
  const work: [Obj, Obj][] = [[merged, patch]];
  for (let next = work.pop(); next; next = work.pop()) {
    const [out, p] = next;
    for (const [key, value] of Object.entries(p)) {
      if (value === null) delete out[key];
      else if (isJsonObject(value)) {
        const inner: Obj = isJsonObject(out[key]) ? { ...out[key] } : {};
        out[key] = inner;
        work.push([inner, value]);
      } else out[key] = value;
    }
  }
  return merged;
}
