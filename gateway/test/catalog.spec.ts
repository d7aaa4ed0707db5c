import protobuf from "protobufjs";
import { loadReflection } from "@vnm/kit";
import { describe, expect, it } from "vitest";
import { buildCatalog, parseTemplate } from "@vnm/kit";
import { Router } from "../src/router.ts";

describe("catalog from the proto files", () => {
  const catalog = buildCatalog();
  it("derives the bridge routes from google.api.http", () => {
    const routes = catalog.routes.filter((r) => r.service === "vnm.bridge.v1.BridgeService");
    expect(routes.map((r) => `${r.method} ${r.template} ${r.shape.kind}`).sort()).toEqual([
      "DELETE /bridges/{id} empty",
      "GET /bridges collection",
      "GET /bridges/{id} item",
      "POST /bridges item",
      "PUT /bridges/{id} item",
    ]);
    const bridge = catalog.resources.find((m) => m.name === "Bridge")!;
    expect(bridge.resource).toMatchObject({ mediaType: "Bridge-v4", collectionMediaType: "collection.Bridge-v4" });
    expect([...bridge.byName.get("id")!.behaviors]).toEqual(["IMMUTABLE"]);
    expect([...bridge.byName.get("vxlanPortIds")!.behaviors]).toEqual(["OUTPUT_ONLY"]);
  });

  it("knows which cached lists depend on a kind", () => {
    expect([...catalog.affected(["Bridge"])].sort()).toEqual([
      "Bridge",
      "DhcpHost",
      "DhcpSubnet",
      "DhcpV6Host",
      "DhcpV6Subnet",
      "Ip4MacPair",
      "MacPort",
      "Port",
    ]);
    expect([...catalog.affected(["DhcpSubnet:deleted"])].sort()).toEqual(["DhcpHost", "DhcpSubnet"]);
    expect([...catalog.affected(["DhcpSubnet:created"])]).toEqual(["DhcpSubnet"]);
    expect([...catalog.affected(["MacPort:deleted"])]).toEqual(["MacPort"]);
  });

  it("matches paths, reporting the allowed methods of a path", () => {
    const router = new Router(catalog.routes);
    expect(router.match("GET", ["bridges", "abc"]).match?.params).toEqual({ id: "abc" });
    expect(router.match("PATCH", ["bridges", "abc"])).toEqual({ match: undefined, allowed: ["GET", "PUT", "DELETE"] });
    expect(router.match("GET", ["nothing"]).allowed).toEqual([]);
  });
});

describe("additional_bindings", () => {
  const build = (bindings: string) => {
    const root = loadReflection();
    protobuf.parse(
      `syntax = "proto3"; package vnm.demo.v1;
       import "google/api/annotations.proto"; import "vnm/api/options.proto";
       message Thing { option (vnm.api.resource) = { media_type: "Thing-v1" }; optional string id = 1; }
       message Req { string id = 1; }
       service Things {
         rpc Get(Req) returns (Thing) { option (google.api.http) = { get: "/things/{id}" ${bindings} }; }
       }`,
      root,
      { keepCase: true },
    );
    root.resolveAll();
    return buildCatalog(root).routes.filter((r) => r.service === "vnm.demo.v1.Things").map((r) => r.template);
  };
  it("takes one entry (an object) or several (an array)", () => {
    expect(build(`additional_bindings { get: "/thingz/{id}" }`)).toEqual(["/things/{id}", "/thingz/{id}"]);
    expect(build(`additional_bindings { get: "/a/{id}" } additional_bindings { get: "/b/{id}" }`).sort()).toEqual([
      "/a/{id}",
      "/b/{id}",
      "/things/{id}",
    ]);
  });
  it("rejects malformed templates", () => {
    expect(() => parseTemplate("things")).toThrow();
    expect(() => parseTemplate("/x/{a}b")).toThrow();
  });
});
