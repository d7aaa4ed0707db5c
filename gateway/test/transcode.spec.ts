import protobuf from "protobufjs";
import type { Violation } from "@vnm/kit";
import { describe, expect, it } from "vitest";
import { resolveLink } from "@vnm/kit";
import { fromJson, parseJson, toJson } from "../src/transcode.ts";

// A message with every kind of field the gateway converts, declared in proto text.
const root = protobuf.parse(
  `syntax = "proto3";
   package t;
   message Inner { optional string a = 1; }
   message M {
     optional string id = 1;
     optional int32 small = 2;
     optional int64 big = 3;
     optional uint32 port = 4;
     optional bool flag = 5;
     repeated string ids = 6;
     optional Inner inner = 7;
     optional string ro = 8;
     optional string postOnly = 9;
     optional string req = 10;
   }`,
  { keepCase: true },
).root;
root.resolveAll();
const type = root.lookupType("t.M");
// Field behaviours are options; set them here as the .proto files would.
const info = (() => {
  const base = buildCatalogMessage();
  base.byName.get("ro")!.behaviors.add("OUTPUT_ONLY");
  base.byName.get("postOnly")!.behaviors.add("IMMUTABLE");
  base.byName.get("req")!.behaviors.add("REQUIRED");
  return base;
})();

function buildCatalogMessage() {
  // A MessageInfo built by hand from the reflected type (the catalog indexes only vnm services).
  const fields = type.fieldsArray.map((f) => {
    f.resolve();
    return {
      name: f.name,
      type: f.resolvedType instanceof protobuf.Type ? "message" : f.type,
      repeated: f.repeated,
      behaviors: new Set<"REQUIRED" | "OUTPUT_ONLY" | "IMMUTABLE">(),
      internal: false,
      link: undefined as string | undefined,
      message: undefined as unknown,
    };
  });
  const msg = { fullName: "t.M", name: "M", fields, byName: new Map(fields.map((f) => [f.name, f])), hasInt64: true };
  const inner = { fullName: "t.Inner", name: "Inner", fields: [{ name: "a", type: "string", repeated: false, behaviors: new Set(), internal: false }], byName: new Map(), hasInt64: false };
  inner.byName.set("a", inner.fields[0]);
  fields.find((f) => f.name === "inner")!.message = inner;
  // biome-ignore lint/suspicious/noExplicitAny: shaped like MessageInfo
  return msg as any;
}

function convert(json: Record<string, unknown>, mode: "create" | "replace" = "create") {
  const violations: Violation[] = [];
  const value = fromJson(info, { req: "r", ...json }, mode, violations);
  return { value, violations };
}

describe("fromJson: types are checked before they become proto values", () => {
  it("reads decimal strings as integers and 'true'/'false' as booleans", () => {
    expect(convert({ small: "24", flag: "true", port: 8080 }).value).toMatchObject({ small: 24, flag: true, port: 8080 });
  });
  it.each([
    [{ small: "abc" }, "small"],
    [{ small: 1.5 }, "small"],
    [{ small: true }, "small"],
    [{ small: 2 ** 31 }, "small"],
    [{ port: -1 }, "port"],
    [{ flag: 1 }, "flag"],
    [{ id: 5 }, "id"],
    [{ id: "a\u0000b" }, "id"],
    [{ ids: ["\ud800"] }, "ids"],
    [{ ids: "x" }, "ids"],
    [{ ids: ["a", 1] }, "ids"],
    [{ ids: [null] }, "ids"],
    [{ inner: "x" }, "inner"],
    [{ inner: { a: 1 } }, "inner.a"],
  ])("%j is refused, naming %s", (json, property) => {
    const { violations } = convert(json);
    expect(violations.map((v) => v.property)).toEqual([property]);
  });
  it("keeps 64-bit integers exact", () => {
    const json = parseJson('{"big": 9223372036854775807, "req": "r"}', true) as Record<string, unknown>;
    expect(convert(json).value["big"]).toBe("9223372036854775807");
    expect(convert({ big: "-9223372036854775808" }).value["big"]).toBe("-9223372036854775808");
    const over = parseJson('{"big": 9223372036854775808}', true) as Record<string, unknown>;
    expect(convert(over).violations[0]?.property).toBe("big");
  });
  const INT32 = "must be an integer between -2147483648 and 2147483647";
  const INT64 = "must be an integer between -9223372036854775808 and 9223372036854775807";
  it.each([
    // As a client's JSON text is read: huge numbers, written any way, are out of range, never a 500.
    ['{"small": 1e21}', false, INT32],
    ['{"small": -1e300}', false, INT32],
    ['{"small": 1e400}', false, "must be an integer"],
    ['{"big": 1e21}', true, INT64],
    ['{"big": 1E+999999999}', true, INT64],
    ['{"big": 1.5e300}', true, INT64],
    // Beyond 2^53 a double cannot hold what was written: the text decides, exactly.
    ['{"big": 9007199254740993.5}', true, "must be an integer"],
    ['{"big": 9007199254740993e-1}', true, "must be an integer"],
    ['{"big": 1e-999999999}', true, "must be an integer"],
    // A number kept as its text is still no object.
    ['{"inner": 1.0}', false, "must be an object"],
    // Digits only: no spaces around them.
    ['{"small": " 24 "}', false, "must be an integer"],
    ['{"big": "9007199254740993 "}', true, "must be an integer"],
  ])("%s (read losslessly: %s) is refused: %s", (text, lossless, message) => {
    const json = parseJson(text, lossless) as Record<string, unknown>;
    const { violations } = convert(json);
    expect(violations).toEqual([{ property: Object.keys(json)[0], message }]);
  });
  it.each([
    ['{"big": 9007199254740993.0}', "9007199254740993"],
    ['{"big": 9223372036854775807.000}', "9223372036854775807"],
    ['{"big": 90071992547409930e-1}', "9007199254740993"],
    ['{"big": 9.007199254740993e15}', "9007199254740993"],
    ['{"big": -9.223372036854775808E18}', "-9223372036854775808"],
    ['{"big": 0.0e99999}', "0"],
  ])("%s is the integer %s, exactly", (text, digits) => {
    const { value, violations } = convert(parseJson(text, true) as Record<string, unknown>);
    expect(violations).toEqual([]);
    expect(value["big"]).toBe(digits);
  });
  it("ignores read-only fields, POST-only fields on replace, and unknown fields; null is absent", () => {
    expect(convert({ ro: "x", other: 1, id: null }).value).toEqual({ req: "r" });
    expect(convert({ postOnly: "p" }, "create").value).toMatchObject({ postOnly: "p" });
    expect(convert({ postOnly: "p" }, "replace").value).not.toHaveProperty("postOnly");
  });
  it("requires REQUIRED fields", () => {
    const violations: Violation[] = [];
    fromJson(info, { req: null }, "create", violations);
    expect(violations).toEqual([{ property: "req", message: "may not be null" }]);
  });
});

describe("toJson", () => {
  it("writes every field, null when unset, [] for empty lists, int64 digits exactly", () => {
    const text = toJson(info, { id: "x", big: "9223372036854775807" }, "http://h");
    expect(text).toContain('"big":9223372036854775807');
    const obj = JSON.parse(text);
    expect(obj).toMatchObject({ id: "x", small: null, ids: [], inner: null, flag: null });
  });
  it("resolves links against the message's fields; unset referenced fields make the link null", () => {
    expect(resolveLink(info, "/things/{id}/x/{macAddress}", { id: "a b" }, "http://h")).toBe("http://h/things/a%20b/x/{macAddress}");
    expect(resolveLink(info, "/chains/{postOnly}", { id: "a" }, "http://h")).toBeNull();
  });
  it("percent-encodes a character outside the BMP in a link as its UTF-8 bytes", () => {
    expect(resolveLink(info, "/things/{id}", { id: "a\u{1F600}/b" }, "")).toBe("/things/a%F0%9F%98%80%2Fb");
  });
  it("escapes links as JSON when the base URI is not plain text", () => {
    const linked = { ...info, fields: [...info.fields, { name: "self", type: "string", repeated: false, behaviors: new Set(), internal: false, link: "/things/{id}" }] };
    linked.byName = new Map(linked.fields.map((f: { name: string }) => [f.name, f]));
    const base = 'http://h"\\\u0001';
    expect(JSON.parse(toJson(linked, { id: 'q"x' }, base)).self).toBe(`${base}/things/q%22x`);
    expect(JSON.parse(toJson(linked, { id: "plain" }, "http://h")).self).toBe("http://h/things/plain");
  });
});
