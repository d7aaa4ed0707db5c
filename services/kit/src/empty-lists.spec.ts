// A body's lists given empty, which protobuf cannot carry: named by the gateway, put back by the service.
import { describe, expect, it } from "vitest";
import { buildCatalog } from "./catalog.ts";
import { emptyLists, withEmptyLists } from "./empty-lists.ts";

const catalog = buildCatalog();
const policy = catalog.kindOf("vnm.qos.v1.QosPolicy").message;
const bridge = catalog.kindOf("vnm.bridge.v1.Bridge").message;

describe("a body's empty lists", () => {
  it("are its repeated fields given as [], and nothing else", () => {
    expect(emptyLists(policy, { name: "p", rules: [] })).toEqual(["rules"]);
    expect(emptyLists(policy, { name: "p", rules: [{ type: "dscp_marking" }] })).toEqual([]);
    expect(emptyLists(policy, { name: "p" })).toEqual([]);
    expect(emptyLists(bridge, { name: [], inboundMirrorIds: [], outboundMirrorIds: [] })).toEqual(["inboundMirrorIds", "outboundMirrorIds"]);
  });

  it("are put back where the decoded body leaves them unset, never over a value, never on a field that is no list", () => {
    expect(withEmptyLists(policy, { name: "p" }, JSON.stringify(["rules"]))).toEqual({ name: "p", rules: [] });
    expect(withEmptyLists(policy, { name: "p", rules: [{ type: "dscp_marking" }] }, JSON.stringify(["rules"]))).toEqual({ name: "p", rules: [{ type: "dscp_marking" }] });
    expect(withEmptyLists(policy, { name: "p" }, JSON.stringify(["name", "nonsense"]))).toEqual({ name: "p" });
    expect(withEmptyLists(policy, undefined, JSON.stringify(["rules"]))).toEqual({ rules: [] });
    expect(withEmptyLists(policy, { name: "p" }, undefined)).toEqual({ name: "p" });
  });

  it("named by a value that is not a list of field names is the caller's fault", () => {
    for (const bad of ["{", "{}", "[1]", '"rules"']) expect(() => withEmptyLists(policy, {}, bad), bad).toThrow(/malformed/);
  });
});
