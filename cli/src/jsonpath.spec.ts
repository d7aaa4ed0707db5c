import { describe, expect, it } from "vitest";
import { naturalKey } from "./apply.ts";
import { parseTemplate, printTemplate, sortBy } from "./jsonpath.ts";
import { aliasesOf, allKinds, kindNamed, pluralOf } from "./kinds.ts";

const items = [
  { name: "web", tenantId: "acme", adminStateUp: true, ports: ["p1", "p2"] },
  { name: "db", tenantId: "acme", adminStateUp: false, ports: [] },
];
const print = (template: string, value: unknown) => printTemplate(parseTemplate(template), value);

describe("jsonpath templates", () => {
  it("print kubectl's templates of an item and of a list ({.items[*]...}, range, literals, filters)", () => {
    expect(print("{.name}", items[0])).toBe("web");
    expect(print("{.items[*].name}", items)).toBe("web db");
    expect(print('{range .items[*]}{.name}{"\\t"}{.adminStateUp}{"\\n"}{end}', items)).toBe("web\ttrue\ndb\tfalse\n");
    expect(print("{.items[0].ports}", items)).toBe('["p1","p2"]');
    expect(print('{.items[?(@.adminStateUp==false)].name}', items)).toBe("db");
    expect(print("name: {.name}, none: {.missing}.", items[0])).toBe("name: web, none: .");
    expect(print("{.name}", { name: "red\u001b[2Jgreen\u202e" })).toBe("redgreen");
  });

  it("refuse what is no template as usage errors, and keep them bounded", () => {
    expect(() => parseTemplate("{.name")).toThrow(/unclosed \{/);
    expect(() => parseTemplate("{end}")).toThrow(/\{end\} without \{range\}/);
    expect(() => parseTemplate("{range .items[*]}{.name}")).toThrow(/\{range\} without \{end\}/);
    expect(() => parseTemplate(`{.${"a".repeat(1100)}}`)).toThrow(/at most 1024/);
    expect(() => parseTemplate("{range .a}".repeat(9) + "{end}".repeat(9))).toThrow(/nest at most 8/);
    // No JavaScript runs in a filter.
    expect(() => print("{.items[?(@.constructor.constructor('return process')().exit())]}", items)).toThrow();
  });

  it("sort by a field, numbers and strings in order, items without it last, ties as listed", () => {
    const rows = [{ n: "b", w: 2 }, { n: "a" }, { n: "c", w: 1 }, { n: "d", w: 2 }];
    expect(sortBy(".w")(rows).map((r) => (r as { n: string }).n)).toEqual(["c", "b", "d", "a"]);
    expect(sortBy("{.n}")(rows).map((r) => (r as { n: string }).n)).toEqual(["a", "b", "c", "d"]);
    expect(() => sortBy("{.a}{.b}")).toThrow(/one field path/);
  });
});

describe("kinds' other names", () => {
  it("have plurals and, when no two kinds would share one, short names", () => {
    expect(pluralOf("bridge")).toBe("bridges");
    expect(pluralOf("qos-policy")).toBe("qos-policies");
    expect(pluralOf("ip-addr-group-addr")).toBe("ip-addr-group-addrs");
    expect(aliasesOf(kindNamed("bridge")!)).toEqual(["bridges", "br"]);
    expect(aliasesOf(kindNamed("dhcp-subnet")!)).toEqual(["dhcp-subnets", "ds"]);
    // route and router would both be "ro": neither has it.
    expect(aliasesOf(kindNamed("route")!)).toEqual(["routes"]);
    expect(aliasesOf(kindNamed("router")!)).toEqual(["routers"]);
    const all = allKinds().flatMap((k) => [k.command, ...aliasesOf(k)]);
    expect(new Set(all).size).toBe(all.length);
    expect(kindNamed("br")).toBe(kindNamed("bridge"));
  });

  it("say which item a document without id: means: its name, else the fields of its key", () => {
    expect(naturalKey(kindNamed("bridge")!, { name: "web", tenantId: "acme" })).toEqual(["name"]);
    expect(naturalKey(kindNamed("dhcp-subnet")!, { subnetPrefix: "10.0.0.0", subnetLength: 24 })).toEqual(["subnetPrefix", "subnetLength"]);
    expect(naturalKey(kindNamed("dhcp-subnet")!, { subnetPrefix: "10.0.0.0" })).toBeUndefined();
    // A kind keyed by an id, without a name or fields that cannot change: always created.
    expect(naturalKey(kindNamed("health-monitor")!, { type: "TCP" })).toBeUndefined();
    expect(naturalKey(kindNamed("bridge")!, { tenantId: "acme" })).toBeUndefined();
  });
});
