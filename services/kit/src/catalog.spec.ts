// What the catalog derives from proto declarations alone: each kind's own RPCs, its parent and
// its tenant rule, the paths links lead to that nothing serves, and the lists a change affects.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildCatalog, domainOf, loadCatalog, peersOf } from "./catalog.ts";
import { loadDescriptors } from "./descriptors.ts";
import { ROOT } from "./repo.ts";
import { protoDirWith } from "./testing.ts";

/** A catalog of the repository's proto files and one more, built by buf as `npm run proto` does. */
function catalogOf(source: string) {
  const dir = protoDirWith({ "vnm/zoo/v1/zoo.proto": source });
  try {
    return buildCatalog(loadDescriptors(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ZOO = `
syntax = "proto3";
package vnm.zoo.v1;
import "google/api/annotations.proto";
import "google/protobuf/empty.proto";
import "vnm/api/options.proto";
message Pen {
  option (vnm.api.resource) = { media_type: "Pen-v1" tenant_field: "tenantId" };
  optional string id = 1;
  optional string tenantId = 2;
  string keeper = 20 [(vnm.api.link) = "/keepers/{id}"];
}
message Animal {
  option (vnm.api.resource) = { media_type: "Animal-v1" };
  optional string name = 1;
  string penId = 2 [(vnm.api.internal) = true];
  string uri = 20 [(vnm.api.link) = "/pens/{penId}/animals/{name}"];
}
message Shed {
  option (vnm.api.resource) = { media_type: "Shed-v1" };
  optional string id = 1;
}
message Ref { string id = 1; string name = 2; }
message NewAnimal { string id = 1; Animal animal = 2; }
message Animals { repeated Animal items = 1; }
service ZooService {
  rpc GetPen(Ref) returns (Pen) { option (google.api.http) = { get: "/pens/{id}" }; }
  rpc ListAnimals(Ref) returns (Animals) { option (google.api.http) = { get: "/pens/{id}/animals" }; }
  rpc GetAnimal(Ref) returns (Animal) { option (google.api.http) = { get: "/pens/{id}/animals/{name}" }; }
  rpc AddAnimal(NewAnimal) returns (Animal) { option (google.api.http) = { post: "/pens/{id}/animals" body: "animal" }; }
  rpc DropAnimal(Ref) returns (google.protobuf.Empty) { option (google.api.http) = { delete: "/pens/{id}/animals/{name}" }; }
  rpc GetShed(Ref) returns (Shed) { option (google.api.http) = { get: "/sheds/{id}" }; }
}
`;

describe("alias media types", () => {
  it("name the same item and its collection beside the main types, in the order declared", () => {
    const c = catalogOf(`
syntax = "proto3";
package vnm.zoo.v1;
import "google/api/annotations.proto";
import "vnm/api/options.proto";
message Gate {
  option (vnm.api.resource) = { media_type: "Gate-v1" alias_media_types: "OldGate-v1" alias_media_types: "IronGate-v2" };
  optional string id = 1;
}
message Post {
  option (vnm.api.resource) = { media_type: "Post-v1" };
  optional string id = 1;
}
message Ref { string id = 1; }
service GateService {
  rpc GetGate(Ref) returns (Gate) { option (google.api.http) = { get: "/gates/{id}" }; }
  rpc GetPost(Ref) returns (Post) { option (google.api.http) = { get: "/posts/{id}" }; }
}
`);
    expect(c.kindOf("vnm.zoo.v1.Gate").resource).toMatchObject({
      mediaType: "Gate-v1",
      collectionMediaType: "collection.Gate-v1",
      aliasMediaTypes: ["OldGate-v1", "IronGate-v2"],
      aliasCollectionMediaTypes: ["collection.OldGate-v1", "collection.IronGate-v2"],
    });
    expect(c.kindOf("vnm.zoo.v1.Post").resource).toMatchObject({ aliasMediaTypes: [], aliasCollectionMediaTypes: [] });
  });
});

describe("kinds", () => {
  const catalog = catalogOf(ZOO);

  it("are qualified by their domain", () => {
    expect(domainOf("vnm.zoo.v1.Pen")).toBe("zoo");
    expect(domainOf("google.protobuf.Empty")).toBeUndefined();
    expect([...catalog.kinds.keys()].filter((k) => k.startsWith("zoo.")).sort()).toEqual(["zoo.Animal", "zoo.Pen", "zoo.Shed"]);
  });

  it("find their own RPCs, body field and parent from the paths", () => {
    expect(catalog.kindOf("vnm.zoo.v1.Animal")).toMatchObject({
      service: "vnm.zoo.v1.ZooService",
      rpcs: { list: "ListAnimals", get: "GetAnimal", create: "AddAnimal", update: undefined, delete: "DropAnimal" },
      body: "animal",
      parent: "zoo.Pen",
      itemTemplate: "/pens/{id}/animals/{name}",
    });
    expect(() => catalog.kindOf("vnm.zoo.v1.Ref")).toThrow(/not a resource/);
  });

  it("follow their parent's tenant, or are for administrators when no ancestor has one", () => {
    expect(catalog.kindOf("vnm.zoo.v1.Pen").tenancy).toBe("own");
    expect(catalog.kindOf("vnm.zoo.v1.Animal").tenancy).toBe("parent");
    expect(catalog.kindOf("vnm.zoo.v1.Shed").tenancy).toBe("admin");
  });

  it("know where links lead that nothing serves, and which lists a change affects", () => {
    expect(catalog.unserved.some((s) => s.length === 2 && "literal" in s[0]! && s[0].literal === "keepers")).toBe(true);
    expect([...catalog.affected(["zoo.Pen:deleted"])].sort()).toEqual(["zoo.Animal", "zoo.Pen"]);
    expect([...catalog.affected(["zoo.Pen:created"])]).toEqual(["zoo.Pen"]);
  });
});

describe("descriptions", () => {
  const SHOP = `
syntax = "proto3";
package vnm.shop.v1;
import "google/api/annotations.proto";
import "vnm/api/options.proto";
// A basket.
message Basket {
  option (vnm.api.resource) = { media_type: "Basket-v1" };
  optional string id = 1;
  // How it is paid.
  optional string payment = 2 [(vnm.api.values) = "card", (vnm.api.values) = "cash"];
  repeated string tags = 3 [(vnm.api.values) = "gift"];
}
// Baskets of the shop.
service BasketService {
  // Get a basket. It may be empty.
  rpc GetBasket(Basket) returns (Basket) {
    option (google.api.http) = { get: "/baskets/{id}" };
  }
}
`;

  it("keep the proto comments of services, RPCs, messages and fields", () => {
    const c = catalogOf(SHOP);
    const route = c.routes.find((r) => r.rpc === "GetBasket")!;
    expect(route.comment).toBe("Get a basket. It may be empty.");
    expect(c.services.find((s) => s.domain === "shop")!.comment).toBe("Baskets of the shop.");
    expect(route.response.comment).toBe("A basket.");
    expect(route.response.byName.get("payment")!.comment).toBe("How it is paid.");
  });

  it("read a field's closed set of values (vnm.api.values), once or several times", () => {
    const basket = catalogOf(SHOP).routes.find((r) => r.rpc === "GetBasket")!.response;
    expect(basket.byName.get("payment")!.values).toEqual(["card", "cash"]);
    expect(basket.byName.get("tags")!.values).toEqual(["gift"]);
    expect(basket.byName.get("id")!.values).toBeUndefined();
  });
});

describe("the parts that call a method as themselves (vnm.api.callers)", () => {
  const callersOf = (names: string[]) => `
syntax = "proto3";
package vnm.kennel.v1;
import "google/protobuf/empty.proto";
import "vnm/api/options.proto";
service KennelService {
  rpc Feed(google.protobuf.Empty) returns (google.protobuf.Empty) {
${names.map((n) => `    option (vnm.api.callers) = "${n}";`).join("\n")}
  }
}
`;

  it("are read once or several times, and make the call graph between parts", () => {
    const c = catalogOf(callersOf(["tracing", "gateway"]));
    expect([...c.callers.get("vnm.kennel.v1.KennelService/Feed")!]).toEqual(["tracing", "gateway"]);
    expect(peersOf(c, "tracing")).toEqual(["bridge", "identity", "kennel", "routing"]);
    expect(peersOf(c, "tunnel")).toEqual(["bridge", "identity", "routing"]);
    expect(peersOf(c, "identity")).toEqual([]);
  });

  it("are the rows of docs/security.md's table that name parts, method for method", () => {
    const doc = readFileSync(join(ROOT, "docs", "security.md"), "utf8");
    const table = doc.slice(doc.indexOf("| Method | Called as itself by |"));
    const rows = table.slice(0, table.indexOf("\n\n")).split("\n").slice(2);
    const documented = new Map<string, string[]>();
    for (const row of rows) {
      const [method = "", parts = ""] = row.split("|").slice(1).map((c) => c.trim());
      if (/^(anyone|no part)/.test(parts)) continue;
      const names = parts === "every part" ? ["*"] : parts.split(", ");
      for (const [, m] of method.matchAll(/`(\w+\.\w+)`/g)) documented.set(m!, names.sort());
    }
    const declared = new Map([...loadCatalog().callers].map(([m, parts]) => [m.replace(/^.*\.(\w+\/\w+)$/, "$1").replace("/", "."), [...parts].sort()]));
    expect(Object.fromEntries([...documented].sort())).toEqual(Object.fromEntries([...declared].sort()));
  });

  it("name only parts: a name that is none is refused when the contract is read", () => {
    expect(() => catalogOf(callersOf(["tracng"]))).toThrow(/KennelService\/Feed: vnm.api.callers names "tracng", which is no part/);
  });
});
