// A merge patch made in the service: the paths the gateway names and the item they make, as
// RFC 7396 would make it of the item's representation.
import { describe, expect, it } from "vitest";
import { buildCatalog } from "./catalog.ts";
import { patchedMessage, patchPaths, readPatchPaths } from "./patch.ts";

const catalog = buildCatalog();
const bridge = catalog.kindOf("vnm.bridge.v1.Bridge").message;
const vip = catalog.kindOf("vnm.compat.v1.CompatVip").message;
const trace = catalog.kindOf("vnm.tracing.v1.TraceRequest").message;

describe("a merge patch's paths", () => {
  it("name what it sets and what it removes, down into nested messages, and nothing the message lacks", () => {
    expect(patchPaths(vip, { name: "v", description: null, session_persistence: { type: "APP_COOKIE", cookie_name: null }, nonsense: 1 })).toEqual({
      set: [["name"], ["session_persistence"], ["session_persistence", "type"]],
      unset: [["description"], ["session_persistence", "cookie_name"]],
    });
  });

  it("travel as JSON and a malformed set of them is refused", () => {
    expect(readPatchPaths(JSON.stringify({ set: [["name"]], unset: [] }))).toEqual({ set: [["name"]], unset: [] });
    expect(readPatchPaths(undefined)).toBeUndefined();
    for (const bad of ["{", "[]", JSON.stringify({ set: [[]], unset: [] }), JSON.stringify({ set: [[1]], unset: [] }), JSON.stringify({ set: [["a"]] })]) {
      expect(() => readPatchPaths(bad), bad).toThrow(/malformed/);
    }
  });
});

describe("the item a merge patch makes", () => {
  it("replaces what it sets, removes what it nulls, and keeps the rest", () => {
    const current = { id: "b", name: "old", adminStateUp: true, inboundFilterId: "f", inboundMirrorIds: ["m1", "m2"] };
    const patch = { name: "new", inboundMirrorIds: ["m3"] };
    const out = patchedMessage(bridge, current, patch, patchPaths(bridge, { name: "new", inboundFilterId: null, inboundMirrorIds: ["m3"] }));
    expect(out).toEqual({ id: "b", name: "new", adminStateUp: true, inboundMirrorIds: ["m3"] });
    expect(current.name).toBe("old");
  });

  it("sets a value the wire left out as its default (false, an empty list)", () => {
    const out = patchedMessage(bridge, { adminStateUp: true, inboundMirrorIds: ["m1"] }, {}, patchPaths(bridge, { adminStateUp: false, inboundMirrorIds: [] }));
    expect(out).toEqual({ adminStateUp: false, inboundMirrorIds: [] });
  });

  it("merges a nested message member by member, making it when the item has none", () => {
    const current = { session_persistence: { type: "APP_COOKIE", cookie_name: "c" } };
    expect(patchedMessage(vip, current, { session_persistence: {} }, patchPaths(vip, { session_persistence: { cookie_name: null } }))).toEqual({ session_persistence: { type: "APP_COOKIE" } });
    expect(patchedMessage(vip, {}, { session_persistence: { type: "SOURCE_IP" } }, patchPaths(vip, { session_persistence: { type: "SOURCE_IP" } }))).toEqual({ session_persistence: { type: "SOURCE_IP" } });
    expect(current.session_persistence.cookie_name).toBe("c");
  });

  it("merges free-form JSON member by member too, keeping every digit", () => {
    const current = { condition: '{"a":1,"b":{"c":2,"d":3},"big":12345678901234567890}' };
    const patch = { condition: '{"b":{"c":null,"e":4},"f":98765432109876543210}' };
    const out = patchedMessage(trace, current, patch, patchPaths(trace, { condition: {} }));
    expect(out["condition"]).toBe('{"a":1,"b":{"d":3,"e":4},"big":12345678901234567890,"f":98765432109876543210}');
  });
});
