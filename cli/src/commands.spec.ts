import { loadCatalog } from "@vnm/kit";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addKindCommand } from "./commands.ts";
import { parseExact } from "./json.ts";
import { allKinds, commandOf, kebab, kindNamed, optionOf } from "./kinds.ts";
import { fit, parseFormat, render } from "./output.ts";
import { clean, escapeJson, toYaml } from "./text.ts";

describe("names", () => {
  it("turn message names and path variables into command and option names", () => {
    expect(kebab("DhcpV6Subnet")).toBe("dhcp-v6-subnet");
    expect(kebab("L2Insertion")).toBe("l2-insertion");
    expect(kebab("tenant_id")).toBe("tenant-id");
    expect(optionOf("bridgeId")).toBe("bridge");
    expect(optionOf("subnetAddr")).toBe("subnet");
    expect(optionOf("macPortPair")).toBe("mac-port-pair");
  });

  it("read an item's key and parents from its uri", () => {
    const host = kindNamed("dhcp-host")!;
    const item = { macAddr: "02:00:00:00:00:01", uri: "http://h/bridges/b1/dhcp/10.0.0.0_24/hosts/02%3A00%3A00%3A00%3A00%3A01" };
    expect(host.valuesOf(item)).toEqual({ bridgeId: "b1", subnetAddr: "10.0.0.0_24", hostMac: "02:00:00:00:00:01" });
    expect(host.keyOf(item)).toBe("02:00:00:00:00:01");
    const bridge = kindNamed("bridge")!;
    expect(bridge.valuesBelow({ id: "b1", uri: "http://h/bridges/b1" }, "/bridges/{bridgeId}/dhcp")).toEqual({ bridgeId: "b1" });
    expect(bridge.valuesBelow({ id: "b1", uri: "http://h/bridges/b1" }, "/vteps/{id}/bindings")).toBeUndefined();
  });

  it("know which kind a field names from the catalog (the kit's references, as the console's): single and list fields", () => {
    const ref = (kind: string, field: string) => kindNamed(kind)!.refOf(field)?.command;
    expect(ref("bridge", "inboundFilterId")).toBe("chain");
    expect(ref("bridge", "inboundMirrorIds")).toBe("mirror");
    expect(ref("rule", "jumpChainId")).toBe("chain");
    expect(ref("rule", "inPorts")).toBe("port");
    expect(ref("router", "loadBalancerId")).toBe("load-balancer");
    expect(ref("port", "peerId")).toBe("port");
    expect(ref("route", "nextHopPort")).toBe("port");
    for (const [k, f] of [
      ["bridge", "tenantId"],
      ["bridge", "name"],
      ["bridge", "id"],
      ["port", "deviceId"],
    ])
      expect(ref(k!, f!), `${k}.${f}`).toBeUndefined();
  });
});

describe("commands from the catalog", () => {
  it("give every kind its verbs: the ones its proto binds, and no others", () => {
    const p = new Command("vnm");
    for (const k of allKinds()) addKindCommand(p, k);
    const verbs = (name: string) => p.commands.find((x) => x.name() === name)!.commands.map((v) => v.name()).sort();
    expect(verbs("bridge")).toEqual(["create", "delete", "describe", "get", "list", "update"]);
    expect(verbs("vtep")).toEqual(["create", "delete", "describe", "get", "list"]); // no PUT
    expect(verbs("mac-port")).toEqual(["create", "delete", "describe", "get", "list"]);
    expect(p.commands.map((x) => x.name()).sort()).toEqual([...loadCatalog().kinds.values()].map(commandOf).sort());
  });

  it("give a kind made under several kinds of parent one create with an option each, and an item's actions a verb each", () => {
    const p = new Command("vnm");
    for (const k of allKinds()) addKindCommand(p, k);
    const port = p.commands.find((x) => x.name() === "port")!;
    expect(port.commands.map((v) => v.name()).sort()).toEqual(["create", "delete", "describe", "get", "link", "list", "unlink", "update"]);
    const create = port.commands.find((v) => v.name() === "create")!;
    expect(create.options.map((o) => o.long)).toEqual(expect.arrayContaining(["--router", "--bridge", "--port-address"]));
    expect(port.commands.find((v) => v.name() === "link")!.registeredArguments.map((a) => a.name())).toEqual(["id", "peer"]);
    expect(kindNamed("port")!.actions.map((a) => `${a.method} ${a.route.template}`)).toEqual(["POST /ports/{id}/link", "DELETE /ports/{id}/link"]);
    // A kind's own create stays its only one; a POST answering another message is no action.
    expect(kindNamed("bridge")!.creates).toEqual([]);
    expect(kindNamed("pool")!.actions).toEqual([]);
  });
});

describe("output", () => {
  it("keeps 64-bit integers exact in JSON and YAML", () => {
    const trace = kindNamed("trace-request")!;
    const v = parseExact('{"id":"t","limit":9223372036854775807,"uri":"http://h/traces/t"}');
    expect(render(trace, v, { type: "json" })).toContain('"limit": 9223372036854775807');
    expect(render(trace, v, { type: "yaml" })).toContain("limit: 9223372036854775807");
  });

  it("never lets a control character through: stripped for terminals, escaped in JSON and YAML", () => {
    const hostile = "red\u001b]0;owned\u0007\u001b[2J\u009b31m\u202egreen\r\n";
    expect(clean(hostile)).toBe("redgreen  ");
    const json = escapeJson(JSON.stringify({ name: hostile }));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: none may be left
    expect(json).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(JSON.parse(json).name).toBe(hostile);
    const yaml = toYaml({ name: hostile });
    // biome-ignore lint/suspicious/noControlCharactersInRegex: none may be left (but the line ends)
    expect(yaml).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
  });

  it("fits a table into the width by shrinking its widest column first", () => {
    const rows = [["ID", "NAME"], ["x".repeat(36), "n".repeat(200)]];
    expect(fit(rows, 120)).toEqual([36, 81]);
    expect(fit(rows, undefined)).toEqual([36, 200]);
  });

  it("takes kubectl's output flags and refuses others as usage errors", () => {
    expect(parseFormat("wide")).toEqual({ type: "wide" });
    expect(parseFormat("=json")).toEqual({ type: "json" }); // -o=json
    expect(parseFormat(undefined)).toEqual({ type: "table" }); // in a pipe too
    const f = parseFormat("custom-columns=NAME:.name,FIRST:.list[0]");
    expect(f.type === "custom" && f.columns.map((c) => [c.header, c.value({ name: "n", list: ["a"] })])).toEqual([
      ["NAME", "n"],
      ["FIRST", "a"],
    ]);
    expect(() => parseFormat("xml")).toThrow(/formats are/);
    expect(() => parseFormat("custom-columns=NAME")).toThrow(/HEADER:.field/);
  });
});
