import { catalog } from "@vnm/kit";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addKindCommand, commandOf, kebab, optionOf } from "./commands.ts";
import { parseExact, render } from "./output.ts";

describe("names", () => {
  it("turn message names and path variables into command and option names", () => {
    expect(kebab("DhcpV6Subnet")).toBe("dhcp-v6-subnet");
    expect(kebab("L2Insertion")).toBe("l2-insertion");
    expect(kebab("tenant_id")).toBe("tenant-id");
    expect(optionOf("bridgeId")).toBe("bridge");
    expect(optionOf("subnetAddr")).toBe("subnet");
    expect(optionOf("macPortPair")).toBe("mac-port-pair");
  });
});

describe("commands from the catalog", () => {
  it("give every kind its verbs: the ones its proto binds, and no others", () => {
    const p = new Command("vnm");
    const c = catalog();
    for (const k of c.kinds.values()) addKindCommand(p, k, c.routes);
    const verbs = (name: string) => p.commands.find((x) => x.name() === name)!.commands.map((v) => v.name()).sort();
    expect(verbs("bridge")).toEqual(["create", "delete", "get", "list", "update"]);
    expect(verbs("vtep")).toEqual(["create", "delete", "get", "list"]); // no PUT
    expect(verbs("mac-port")).toEqual(["create", "delete", "get", "list"]);
    expect(p.commands.map((x) => x.name()).sort()).toEqual([...c.kinds.values()].map(commandOf).sort());
  });
});

describe("output", () => {
  it("keeps 64-bit integers exact in JSON and YAML, and tables drop links", () => {
    const v = parseExact('{"id":"t","limit":9223372036854775807,"uri":"http://h/traces/t"}');
    expect(render(v, "json")).toContain('"limit": 9223372036854775807');
    expect(render(v, "yaml")).toContain("limit: 9223372036854775807");
    expect(render([v], "table")).toBe("id  limit\nt   9223372036854775807");
  });
});
