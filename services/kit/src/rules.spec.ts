// The fields' rules as the repository's proto files state them (proto/contract.binpb): what a
// client sending a body sees, and the one spelling a value is kept in.
import { getOption } from "@bufbuild/protobuf";
import { predefined } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { describe, expect, it } from "vitest";
import { buildCatalog, loadCatalog } from "./catalog.ts";
import { ApiError } from "./errors.ts";
import { PROTO_DIR } from "./proto.ts";
import { Rules, TEXT_RULE_MESSAGE } from "./rules.ts";

const rules = Rules.load(PROTO_DIR);
const BRIDGE = "vnm.bridge.v1.Bridge";
const ID = "8A4E9F5C-0D8E-4B0B-9A51-1C1F2B1A0E11";

function violations(type: string, body: object) {
  try {
    rules.check(type, body);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError).violations;
  }
  throw new Error("the body passed");
}

describe("a body checked against its fields' rules", () => {
  it("names each offending field once, in the words a client reads", () => {
    expect(violations(BRIDGE, { id: "nope", name: "x".repeat(256), tenantId: "a\u0000b", inboundMirrorIds: [ID, "nope", "nope"] })).toEqual([
      { property: "id", message: "must be a valid UUID" },
      { property: "tenantId", message: "must be valid Unicode text without NUL characters" },
      { property: "name", message: "must be at most 255 characters" },
      { property: "inboundMirrorIds", message: "must be a valid UUID" },
    ]);
    expect(violations(BRIDGE, { outboundMirrorIds: Array(65).fill(ID) })).toEqual([{ property: "outboundMirrorIds", message: "must contain no more than 64 item(s)" }]);
  });

  it("finds a NUL in text inside a list of messages, naming the list, and says the words of the proto's rule", () => {
    const host = { macAddr: "02:00:00:00:00:01", ipAddr: "10.0.0.2", name: "h" };
    expect(rules.check("vnm.bridge.v1.DhcpHost", { ...host, extraDhcpOpts: [{ optName: "a", optValue: "b" }] })).toBeTruthy();
    expect(violations("vnm.bridge.v1.DhcpHost", { ...host, extraDhcpOpts: [{ optName: "a", optValue: "b" }, { optName: "c", optValue: "d\u0000" }] })).toEqual([
      { property: "extraDhcpOpts", message: TEXT_RULE_MESSAGE },
    ]);
    // The kit checks `(vnm.api.text)` itself; its words are the rule's CEL program's (rules.proto).
    const text = rules.registry.getExtension("vnm.api.text");
    expect(text && getOption(text, predefined).cel[0]?.expression).toContain(`'${TEXT_RULE_MESSAGE}'`);
  });

  it("counts characters, not UTF-16 units or bytes", () => {
    expect(rules.check(BRIDGE, { name: "😀".repeat(255) }).name).toHaveLength(510);
    expect(violations(BRIDGE, { name: "😀".repeat(256) })).toEqual([{ property: "name", message: "must be at most 255 characters" }]);
  });

  it("keeps a UUID in lower case, and leaves what it does not check as it came", () => {
    expect(rules.check(BRIDGE, { id: ID, name: "Blue", inboundMirrorIds: [ID], adminStateUp: false })).toEqual({
      id: ID.toLowerCase(),
      name: "Blue",
      inboundMirrorIds: [ID.toLowerCase()],
      adminStateUp: false,
    });
  });

  it("keeps the values inside nested messages and lists of them in their spelling too", () => {
    const monitor = rules.check("vnm.compat.v1.CompatHealthMonitor", { tenant_id: "t", type: "PING", delay: 5, timeout: 5, max_retries: 3, pools: [{ pool_id: ID }, { pool_id: ID }] });
    expect(monitor.pools).toEqual([{ pool_id: ID.toLowerCase() }, { pool_id: ID.toLowerCase() }]);
  });

  it("refuses a value of the wrong type for its field, as a peer that skipped the gateway might send", () => {
    expect(() => rules.check(BRIDGE, { adminStateUp: "yes" })).toThrow(expect.objectContaining({ code: 3, message: expect.stringContaining("adminStateUp") }));
  });

  it("fails loudly for a message the descriptor set does not hold (a proto added without npm run proto)", () => {
    expect(() => rules.check("vnm.nowhere.v1.Thing", {})).toThrow(/npm run proto/);
  });
});

describe("one field's value, as a list's filter", () => {
  it("is checked against that field's rules alone and kept in its spelling", () => {
    expect(rules.checkField(BRIDGE, "inboundFilterId", ID)).toBe(ID.toLowerCase());
    expect(rules.checkField(BRIDGE, "name", "anything")).toBe("anything");
    expect(() => rules.checkField(BRIDGE, "inboundFilterId", "nope")).toThrow(expect.objectContaining({ violations: [{ property: "inboundFilterId", message: "must be a valid UUID" }] }));
  });

  it("keeps an address of either family in its one spelling, also where the message has other required fields", () => {
    // An IP address group's address: `string.ip`, beside a required `version`.
    expect(rules.checkField("vnm.routing.v1.IpAddrGroupAddr", "addr", "2001:DB8:0:0::1")).toBe("2001:db8::1");
    expect(rules.checkField("vnm.routing.v1.IpAddrGroupAddr", "addr", "10.0.0.1")).toBe("10.0.0.1");
    expect(rules.check("vnm.tunnel.v1.Host", { addresses: ["2001:DB8::0:1", "10.1.1.1"] }).addresses).toEqual(["2001:db8::1", "10.1.1.1"]);
  });
});

describe("the catalog's view of the rules", () => {
  it("carries each field's rules in protobuf's JSON form, and a UUID rule marks the field as one", () => {
    const bridge = loadCatalog().kindOf(BRIDGE).message;
    expect(bridge.byName.get("name")?.rules).toEqual({ string: { max_len: "255", "[vnm.api.text]": true } });
    expect(bridge.byName.get("inboundFilterId")).toMatchObject({ uuid: true, rules: { string: { uuid: true } } });
    expect(bridge.byName.get("adminStateUp")?.rules).toBeUndefined();
  });
});

describe("the descriptors the rules are checked over", () => {
  it("stay as the proto states them once messages are checked: the catalog and OpenAPI still read the text rule from them", () => {
    const own = Rules.load(PROTO_DIR);
    expect(violations(BRIDGE, { name: "a\u0000" })).toEqual([{ property: "name", message: TEXT_RULE_MESSAGE }]);
    own.check(BRIDGE, { name: "a" });
    // dhcp.proto imports bridge.proto: its copy is checked with the original Bridge beside it.
    expect(own.check("vnm.bridge.v1.DhcpHost", { macAddr: "02:00:00:00:00:01", ipAddr: "10.0.0.2", name: "h" })).toBeTruthy();
    expect(buildCatalog(own.registry).kindOf(BRIDGE).message.byName.get("name")?.rules).toEqual({ string: { max_len: "255", "[vnm.api.text]": true } });
  });
});
