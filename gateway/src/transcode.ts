// JSON <-> proto objects, driven by the catalog. Client JSON is type-checked field by field
// before it becomes a proto message (protobuf's lenient conversion would turn "abc" into 0);
// responses are written with every field present (null when unset), int64 values with their
// exact digits, and link fields resolved to absolute URLs.
import { compileLinks, type FieldInfo, isJsonObject, isRecord, isUuid, jsonText, LosslessNumber, type MessageInfo, TEXT_RULE_MESSAGE, type Violation } from "@vnm/kit";

export { isJsonObject, LosslessNumber, parseJson } from "@vnm/kit";

const INT_RANGES: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

type Converted = { ok: true; value: unknown } | { ok: false; message: string };

/** Beyond every integer field's range (the widest, uint64, has 20 digits). */
const TOO_LARGE = 10n ** 21n;

/**
 * The integer a JSON number's source text names, exactly (`1.0e3` is 1000); undefined when it
 * has a fraction. A value past every field's range comes back as TOO_LARGE (signed), without
 * working out a power of ten a client chose.
 */
function integralOf(source: string): bigint | undefined {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(source);
  if (!m) return undefined;
  const [, sign, whole, fraction = "", exponent = "0"] = m;
  const digits = (whole! + fraction).replace(/^0+/, "");
  if (digits === "") return 0n;
  // The value is digits x 10^shift.
  const shift = Number(exponent) - fraction.length;
  let n: bigint;
  if (shift >= 0) n = digits.length + shift > 21 ? TOO_LARGE : BigInt(digits) * 10n ** BigInt(shift);
  else if (/^0*$/.test(digits.slice(Math.max(0, digits.length + shift)))) n = BigInt(digits.slice(0, Math.max(0, digits.length + shift)) || "0");
  else return undefined;
  return sign ? -n : n;
}

function integer(type: string, v: unknown): Converted {
  let n: bigint | undefined;
  // BigInt of an integral double is exact (1e21 is 10^21): never its text, which may be "1e+21".
  if (typeof v === "number") n = Number.isInteger(v) ? BigInt(v) : undefined;
  else if (v instanceof LosslessNumber) n = integralOf(v.source);
  else if (typeof v === "string" && /^-?\d{1,40}$/.test(v)) n = BigInt(v);
  const [min, max] = INT_RANGES[type]!;
  if (n === undefined) return { ok: false, message: "must be an integer" };
  if (n < min || n > max) return { ok: false, message: `must be an integer between ${min} and ${max}` };
  // 64-bit values travel as decimal strings (proto-loader longs: String); 32-bit as numbers.
  return { ok: true, value: type.endsWith("64") ? n.toString() : Number(n) };
}

function jsonObjectText(v: unknown): Converted {
  if (!isJsonObject(v)) return { ok: false, message: "must be a JSON object" };
  return { ok: true, value: jsonText(v) };
}

function scalar(field: FieldInfo, v: unknown, violations: Violation[], path: string, mode: Mode): Converted {
  if (field.jsonObject) return jsonObjectText(v);
  if (field.jsonValue) return { ok: true, value: jsonText(v) };
  switch (field.type) {
    case "string":
      if (typeof v !== "string") return { ok: false, message: "must be a string" };
      // Postgres stores neither NUL nor lone surrogates; no field of this API means them.
      if (v.includes("\u0000") || !v.isWellFormed()) {
        return { ok: false, message: TEXT_RULE_MESSAGE };
      }
      if (field.uuid && !isUuid(v)) return { ok: false, message: "must be a valid UUID" };
      return { ok: true, value: v };
    case "bool":
      if (typeof v === "boolean") return { ok: true, value: v };
      if (v === "true" || v === "false") return { ok: true, value: v === "true" };
      return { ok: false, message: "must be a boolean" };
    case "double":
    case "float":
      if (typeof v === "number") return { ok: true, value: v };
      if (v instanceof LosslessNumber) return { ok: true, value: Number(v.source) };
      return { ok: false, message: "must be a number" };
    case "enum":
      return typeof v === "string" && field.enumValues!.includes(v)
        ? { ok: true, value: v }
        : { ok: false, message: `must be one of ${field.enumValues!.join(", ")}` };
    case "message": {
      if (!isJsonObject(v)) return { ok: false, message: "must be an object" };
      const before = violations.length;
      const value = fromJson(field.message!, v, mode === "patch" ? "patch" : "create", violations, path);
      return violations.length === before ? { ok: true, value } : { ok: true, value: undefined };
    }
    case "bytes":
      return { ok: false, message: "is not accepted" };
    default:
      return integer(field.type, v);
  }
}

/** What a body is: a new item (POST), a whole replacement (PUT), or the members a merge patch names (PATCH). */
type Mode = "create" | "replace" | "patch";

/**
 * Converts a client JSON object into a proto object of `msg`. Read-only fields are ignored,
 * and so are POST-only (IMMUTABLE) fields when `mode` is "replace" or "patch"; null means
 * absent, and a patch need not name a required field. Problems are appended to `violations`,
 * named by the top-level JSON property.
 */
export function fromJson(
  msg: MessageInfo,
  json: Record<string, unknown>,
  mode: Mode,
  violations: Violation[],
  path = "",
): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const field of msg.fields) {
    if (field.internal) continue;
    // A field this request may not set is ignored, but still judged by its type: a client
    // sending `"members": "not-a-list"` made a mistake worth telling, derived field or not.
    const ignored = field.behaviors.has("OUTPUT_ONLY") || (mode !== "create" && field.behaviors.has("IMMUTABLE"));
    const out = ignored ? {} : result;
    const property = path ? `${path}.${field.name}` : field.name;
    const v = Object.hasOwn(json, field.name) ? json[field.name] : undefined;
    if (v === undefined || v === null) {
      if (!ignored && mode !== "patch" && field.behaviors.has("REQUIRED")) violations.push({ property, message: "may not be null" });
      continue;
    }
    if (field.repeated) {
      if (!Array.isArray(v)) {
        violations.push({ property, message: "must be an array" });
        continue;
      }
      const items: unknown[] = [];
      for (const item of v) {
        const c = item === null ? ({ ok: false, message: "must not contain null" } as const) : scalar(field, item, violations, property, mode);
        if (!c.ok) {
          violations.push({ property, message: `each element ${c.message}` });
          break;
        }
        items.push(c.value);
      }
      out[field.name] = items;
      continue;
    }
    const c = scalar(field, v, violations, property, mode);
    if (c.ok) out[field.name] = c.value;
    else violations.push({ property, message: c.message });
  }
  return result;
}

/** Converts a query-string or path value for a top-level scalar request field. */
/**
 * The members of a JSON body that are no field of its message (nor of its nested messages),
 * as paths ("nmae", "vip.adress"): ignored, but worth telling the client. Fields the client
 * never sees (`internal`) count as unknown; read-only ones do not (a client PUTs back what it GOT).
 */
export function unknownFields(msg: MessageInfo, json: Record<string, unknown>, path = ""): string[] {
  const out: string[] = [];
  for (const [name, v] of Object.entries(json)) {
    const field = msg.byName.get(name);
    const at = path ? `${path}.${name}` : name;
    if (!field || field.internal) out.push(at);
    else if (field.message && !field.repeated && isJsonObject(v)) out.push(...unknownFields(field.message, v, at));
  }
  return out;
}

export function fromText(field: FieldInfo, raw: string): Converted {
  if (field.repeated || field.type === "message") return { ok: false, message: "cannot be given in the query" };
  return scalar(field, raw, [], field.name, "create");
}

// ---- output -------------------------------------------------------------------------------

/**
 * Written in place of the base URI in a body that is kept in the cache, and replaced by the
 * asking request's own base when it is sent (withBase): a raw U+0001, which no JSON text holds
 * (JSON escapes control characters in strings and allows none outside them), so a kept body
 * never depends on a client's Host header.
 */
export const BASE_MARK = "\u0001";

const baseFilled = new WeakMap<Buffer, { base: string; body: Buffer }>();

/** A kept body with every BASE_MARK replaced by `base` (the last base asked for is remembered per body). */
export function withBase(body: Buffer, base: string): Buffer {
  const known = baseFilled.get(body);
  if (known?.base === base) return known.body;
  const b = Buffer.from(JSON.stringify(base).slice(1, -1));
  const pieces: Buffer[] = [];
  let from = 0;
  for (let i = body.indexOf(1); i >= 0; i = body.indexOf(1, from)) {
    pieces.push(body.subarray(from, i), b);
    from = i + 1;
  }
  const out = pieces.length === 0 ? body : Buffer.concat([...pieces, body.subarray(from)]);
  baseFilled.set(body, { base, body: out });
  return out;
}

type Obj = Record<string, unknown>;
type Writer = (obj: Obj, base: string) => string;
/** One property of an object's JSON, with the comma before it; `links` are the object's links as JSON. */
type Part = (obj: Obj, base: string, links: string[]) => string;
const writers = new WeakMap<MessageInfo, Writer>();
const NO_LINKS: string[] = [];
/** Text JSON writes as it is: printable ASCII but `"` and `\`. */
const JSON_PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** How a present value of a field is written, chosen once per field. */
function valueWriter(field: FieldInfo): (v: unknown, base: string) => string {
  // The service hands back the JSON text the gateway checked and passed on.
  if (field.jsonObject || field.jsonValue) return (v) => String(v);
  switch (field.type) {
    case "message": {
      const msg = field.message!;
      return (v, base) => (isRecord(v) ? toJson(msg, v, base) : "null");
    }
    case "string":
    case "enum":
      return (v) => JSON.stringify(v);
    case "bool":
      return (v) => (v ? "true" : "false");
    case "double":
    case "float":
      return (v) => (Number.isFinite(v) ? String(v) : "null");
    default:
      // Integers: proto-loader gives int64 as decimal strings, 32-bit as numbers.
      return (v) => {
        const s = String(v);
        return /^-?\d+$/.test(s) ? s : "0";
      };
  }
}

function compile(msg: MessageInfo): Writer {
  const fields = msg.fields.filter((f) => !f.internal && !f.behaviors.has("INPUT_ONLY"));
  const templates = fields.flatMap((f) => (f.link ? [f.link] : []));
  const links = templates.length > 0 ? compileLinks(msg, templates) : undefined;
  let linkNo = 0;
  const parts = fields.map((f, i): Part => {
    const key = `${i > 0 ? "," : ""}${JSON.stringify(f.name)}:`;
    if (f.link) {
      const at = linkNo++;
      return (_obj, _base, texts) => key + texts[at];
    }
    const write = valueWriter(f);
    if (f.repeated) {
      return (obj, base) => {
        const v = obj[f.name];
        if (!Array.isArray(v) || v.length === 0) return `${key}[]`;
        let s = `${key}[`;
        for (let j = 0; j < v.length; j++) s += (j > 0 ? "," : "") + write(v[j], base);
        return `${s}]`;
      };
    }
    return (obj, base) => {
      const v = obj[f.name];
      return key + (v === undefined || v === null ? "null" : write(v, base));
    };
  });
  // Escaped link values are plain; so are the templates' own pieces and a base URI the gateway
  // checked (its host is a plain name or address), and then a link is quoted as it is.
  const plainTemplates = templates.every((t) => JSON_PLAIN.test(t));
  return (obj, base) => {
    let texts = NO_LINKS;
    if (links) {
      const plain = plainTemplates && (base === BASE_MARK || JSON_PLAIN.test(base));
      texts = links(obj, base).map((url) => (url === null ? "null" : plain ? `"${url}"` : JSON.stringify(url)));
    }
    let s = "{";
    for (let i = 0; i < parts.length; i++) s += parts[i]!(obj, base, texts);
    return `${s}}`;
  };
}

/** The JSON text of a proto object: every field present, links absolute. */
export function toJson(msg: MessageInfo, obj: Record<string, unknown>, base: string): string {
  let w = writers.get(msg);
  if (!w) {
    w = compile(msg);
    writers.set(msg, w);
  }
  return w(obj, base);
}
