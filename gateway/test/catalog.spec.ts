import { rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildCatalog, loadDescriptors, parseTemplate } from "@vnm/kit";
import { protoDirWith } from "@vnm/kit/testing";
import { routePlans } from "../src/dispatch.ts";
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

  it("offers a kind's alias media types after its main one, for its items and its collections", () => {
    const plans = routePlans(catalog, new Map(), false);
    const offers = (method: string, template: string) => plans.get(catalog.routes.find((r) => r.method === method && r.template === template)!)!.offers;
    const v = (name: string) => `application/vnd.org.service.${name}+json`;
    expect(offers("GET", "/tunnel_zones/{id}/hosts/{hostId}")).toEqual([v("TunnelZoneHost-v1"), v("GreTunnelZoneHost-v1"), "application/json"]);
    expect(offers("POST", "/tunnel_zones/{id}/hosts")).toEqual([v("TunnelZoneHost-v1"), v("GreTunnelZoneHost-v1"), "application/json"]);
    expect(offers("GET", "/tunnel_zones/{id}/hosts")).toEqual([v("collection.TunnelZoneHost-v1"), v("collection.GreTunnelZoneHost-v1"), "application/json"]);
    expect(offers("GET", "/bridges/{id}")).toEqual([v("Bridge-v4"), "application/json"]);
  });

  it("knows which cached lists depend on a kind", () => {
    expect([...catalog.affected(["bridge.Bridge"])].sort()).toEqual([
      "bridge.Bridge",
      "bridge.DhcpHost",
      "bridge.DhcpSubnet",
      "bridge.DhcpV6Host",
      "bridge.DhcpV6Subnet",
      "bridge.Ip4MacPair",
      "bridge.MacPort",
      // The quotas show how many bridges a tenant holds (docs/api.md, "Quotas").
      "quota.Quota",
      // A bridge's ports, peer ports and VXLAN ports, listed under it, are the routing service's.
      "routing.Port",
    ]);
    expect([...catalog.affected(["bridge.DhcpSubnet:deleted"])].sort()).toEqual(["bridge.DhcpHost", "bridge.DhcpSubnet"]);
    expect([...catalog.affected(["bridge.DhcpSubnet:created"])]).toEqual(["bridge.DhcpSubnet"]);
    expect([...catalog.affected(["bridge.MacPort:deleted"])]).toEqual(["bridge.MacPort"]);
  });

  it("derives each kind's own RPCs, its parent and its tenant rule from the paths", () => {
    const host = catalog.kindOf("vnm.bridge.v1.DhcpHost");
    expect(host).toMatchObject({
      kind: "bridge.DhcpHost",
      service: "vnm.bridge.v1.DhcpService",
      rpcs: { list: "ListDhcpHosts", get: "GetDhcpHost", create: "CreateDhcpHost", update: "UpdateDhcpHost", delete: "DeleteDhcpHost" },
      body: "host",
      parent: "bridge.DhcpSubnet",
      tenancy: "parent",
    });
    expect(catalog.kindOf("vnm.bridge.v1.DhcpSubnet").parent).toBe("bridge.Bridge");
    expect(catalog.kindOf("vnm.bridge.v1.Bridge")).toMatchObject({ parent: undefined, tenancy: "own" });
    expect(catalog.kindOf("vnm.bridge.v1.MacPort").rpcs).toMatchObject({ list: "ListMacPorts", create: "CreateMacPort", update: undefined });
    // A pool lives at /pools/{id}: the lists under a load balancer are not its own.
    expect(catalog.kindOf("vnm.lb.v1.Pool")).toMatchObject({ parent: undefined, tenancy: "admin", rpcs: { list: "ListPools", create: "CreatePool" } });
    expect(catalog.kindOf("vnm.identity.v1.User").tenancy).toBe("admin");
  });

  it("knows the paths links lead to that no route serves", () => {
    const router = new Router(catalog);
    // Chains and mirrors, once only linked to, are served by the policy service (issue 52).
    expect(router.unserved(["chains", "x"])).toBe(false);
    expect(router.unserved(["mirrors", "x"])).toBe(false);
    expect(router.unserved(["routers", "x"])).toBe(false);
    expect(router.unserved(["bridges", "x"])).toBe(false);
  });

  it("matches paths, reporting the allowed methods of a path", () => {
    const router = new Router(catalog);
    expect(router.match("GET", ["bridges", "abc"]).match?.params).toEqual({ id: "abc" });
    expect(router.match("PATCH", ["bridges", "abc"])).toEqual({ match: undefined, allowed: ["GET", "PUT", "DELETE"] });
    expect(router.match("GET", ["nothing"]).allowed).toEqual([]);
  });
});

describe("additional_bindings", () => {
  const build = (bindings: string) => {
    const dir = protoDirWith({
      "vnm/demo/v1/demo.proto": `syntax = "proto3"; package vnm.demo.v1;
       import "google/api/annotations.proto"; import "vnm/api/options.proto";
       message Thing { option (vnm.api.resource) = { media_type: "Thing-v1" }; optional string id = 1; }
       message Req { string id = 1; }
       service Things {
         rpc Get(Req) returns (Thing) { option (google.api.http) = { get: "/things/{id}" ${bindings} }; }
       }`,
    });
    try {
      return buildCatalog(loadDescriptors(dir)).routes.filter((r) => r.service === "vnm.demo.v1.Things").map((r) => r.template);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
