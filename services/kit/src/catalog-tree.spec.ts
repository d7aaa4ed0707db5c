// The resource tree the catalog reads from the repository's proto files: which kind lives under
// which, who owns a kind's tenancy, the routes each kind gets per verb and shape, and the path
// variables that name an item. The gateway's routes and the services' tenancy checks are made
// from exactly this, so a proto edit that changes it shows here first.
import { describe, expect, it } from "vitest";
import { buildCatalog, peersOf, type Route } from "./catalog.ts";
import { countedKinds } from "./quota-kinds.ts";
import { bind, parseTemplate, templateShape } from "./paths.ts";

const catalog = buildCatalog();
const kind = (k: string) => {
  const info = catalog.kinds.get(k);
  if (!info) throw new Error(`no kind ${k}`);
  return info;
};
/** The kinds above a kind, nearest first. */
const owners = (k: string): string[] => {
  const out: string[] = [];
  for (let p = kind(k).parent; p; p = kind(p).parent) out.push(p);
  return out;
};
const routesOf = (rpc: string): Route[] => catalog.routes.filter((r) => r.rpc === rpc);
const route = (method: string, template: string): Route => {
  const r = catalog.routes.find((x) => x.method === method && x.template === template);
  if (!r) throw new Error(`no route ${method} ${template}`);
  return r;
};

describe("owner chain", () => {
  it("a DHCP host lives under its subnet, which lives under its bridge; both follow the bridge's tenant", () => {
    expect(owners("bridge.DhcpHost")).toEqual(["bridge.DhcpSubnet", "bridge.Bridge"]);
    expect(owners("bridge.DhcpV6Subnet")).toEqual(["bridge.Bridge"]);
    expect(owners("bridge.MacPort")).toEqual(["bridge.Bridge"]);
    for (const k of ["bridge.DhcpHost", "bridge.DhcpSubnet", "bridge.DhcpV6Subnet", "bridge.MacPort"]) expect(kind(k).tenancy, k).toBe("parent");
    expect(kind("bridge.Bridge")).toMatchObject({ parent: undefined, tenancy: "own" });
  });

  it("kinds with a tenant field of their own are tenant-scoped; the rest, and users, are for admins", () => {
    const byTenancy = (t: string) =>
      [...catalog.kinds.values()]
        .filter((k) => k.tenancy === t)
        .map((k) => k.kind)
        .sort();
    expect(byTenancy("own")).toEqual([
      "bridge.Bridge",
      "compat.CompatHealthMonitor",
      "compat.CompatMember",
      "compat.CompatPool",
      "compat.CompatSecurityGroupRule",
      "compat.CompatVip",
      "policy.Chain",
      "policy.Rule",
      "qos.QosBwLimitRule",
      "qos.QosDscpRule",
      "qos.QosPolicy",
      "quota.Quota",
      "routing.Port",
      "routing.PortGroup",
      "routing.Router",
    ]);
    expect(byTenancy("admin")).toEqual([
      "identity.User",
      "lb.HealthMonitor",
      "lb.LoadBalancer",
      "lb.Pool",
      "lb.PoolMember",
      "lb.Vip",
      "policy.Mirror",
      "routing.HostInterfacePort",
      "routing.IpAddrGroup",
      "routing.IpAddrGroupAddr",
      "routing.L2Insertion",
      "routing.Route",
      "tracing.TraceRequest",
      "tunnel.Host",
      "tunnel.TunnelZone",
      "tunnel.TunnelZoneHost",
      "tunnel.Vtep",
      "tunnel.VtepBinding",
      "tunnel.VtepPort",
    ]);
  });

  it("a route lives at /routes/{id} but is listed and created under its router, which the routing service serves beside it", () => {
    expect(kind("routing.Route")).toMatchObject({
      itemTemplate: "/routes/{id}",
      parent: undefined,
      rpcs: { get: "GetRoute", list: "ListRouterRoutes", create: "CreateRoute", update: undefined, delete: "DeleteRoute" },
    });
    expect(route("POST", "/routers/{routerId}/routes").shape.kind).toBe("item");
    const unserved = catalog.unserved.map((s) => templateShape(s.map((x) => ("literal" in x ? x.literal : `{${x.variable}}`)).join("/")));
    // Chains, once only linked to, are served by the policy service (issue 52).
    expect(unserved).not.toContain("chains/{}");
    expect(unserved).not.toContain("routers/{}");
    expect(kind("routing.Router").itemTemplate).toBe("/routers/{id}");
  });
});

describe("routes per shape", () => {
  it("a collection GET lists the kind, an item GET/POST/PUT answers one, a DELETE answers nothing", () => {
    expect(route("GET", "/bridges").shape).toMatchObject({ kind: "collection", item: { fullName: "vnm.bridge.v1.Bridge" } });
    for (const [m, t] of [
      ["GET", "/bridges/{id}"],
      ["POST", "/bridges"],
      ["PUT", "/bridges/{id}"],
    ] as const) {
      expect(route(m, t).shape, `${m} ${t}`).toMatchObject({ kind: "item", item: { fullName: "vnm.bridge.v1.Bridge" } });
    }
    expect(route("DELETE", "/bridges/{id}").shape.kind).toBe("empty");
  });

  it("kinds served without PUT have none: VTEPs, routes, MAC-port entries, compat security group rules, chains and rules", () => {
    for (const k of ["tunnel.Vtep", "routing.Route", "bridge.MacPort", "compat.CompatSecurityGroupRule", "policy.Chain", "policy.Rule"]) {
      expect(kind(k).rpcs.update, k).toBeUndefined();
      expect(catalog.routes.some((r) => r.method === "PUT" && r.service === kind(k).service && templateShape(r.template) === templateShape(kind(k).itemTemplate)), k).toBe(false);
    }
    expect(kind("bridge.Bridge").rpcs.update).toBe("UpdateBridge");
    expect(kind("compat.CompatPool").rpcs.update).toBe("UpdateCompatPool");
  });

  it("one RPC serves each of its bindings: the MAC table with and without a VLAN, both spellings of a monitor's pools", () => {
    expect(routesOf("ListMacPorts").map((r) => r.template).sort()).toEqual(["/bridges/{bridgeId}/mac_table", "/bridges/{bridgeId}/vlans/{vlanId}/mac_table"]);
    expect(routesOf("ListHealthMonitorPools").map((r) => r.template).sort()).toEqual(["/healh_monitors/{id}/pools", "/health_monitors/{id}/pools"]);
  });

  it("query parameters are the list's own filters and paging, on GET only", () => {
    expect([...route("GET", "/bridges").queryFields.keys()].sort()).toEqual(["limit", "marker", "tenant_id"]);
    expect([...route("GET", "/load_balancers").queryFields.keys()].sort()).toEqual(["limit", "marker"]);
    expect(route("POST", "/bridges/{bridgeId}/vlans/{vlanId}/mac_table").queryFields.size).toBe(0);
    expect(route("GET", "/bridges/{bridgeId}/dhcp").queryFields.size).toBe(0);
  });

  it("a route with more literal segments is tried first, so /bridges/{id}/mac_table never reads 'mac_table' as a subnet", () => {
    const at = (m: string, t: string) => catalog.routes.indexOf(route(m, t));
    expect(at("GET", "/bridges/{bridgeId}/vlans/{vlanId}/mac_table/{macPortPair}")).toBeLessThan(at("GET", "/bridges/{id}"));
    expect(at("GET", "/bridges/{bridgeId}/mac_table")).toBeLessThan(at("GET", "/bridges/{id}"));
  });
});

describe("path variables", () => {
  it("name the request fields an item's path fills", () => {
    const host = route("GET", "/bridges/{bridgeId}/dhcp/{subnetAddr}/hosts/{hostMac}");
    expect(bind(host.segments, ["bridges", "b1", "dhcp", "10.0.0.0_24", "hosts", "aa:bb:cc:dd:ee:ff"])).toEqual({
      bridgeId: "b1",
      subnetAddr: "10.0.0.0_24",
      hostMac: "aa:bb:cc:dd:ee:ff",
    });
    expect(bind(host.segments, ["bridges", "b1", "dhcpV6", "x", "hosts", "y"])).toBeUndefined();
    for (const v of ["bridgeId", "subnetAddr", "hostMac"]) expect(host.request.byName.has(v), v).toBe(true);
  });

  it("every route's variables are fields of its request message, and its body field a message", () => {
    for (const r of catalog.routes) {
      for (const s of parseTemplate(r.template)) if ("variable" in s) expect(r.request.byName.has(s.variable), `${r.rpc} {${s.variable}}`).toBe(true);
      if (r.bodyField) expect(r.bodyField.type, r.rpc).toBe("message");
    }
    expect(route("POST", "/bridges/{bridgeId}/dhcp").bodyField?.name).toBe("subnet");
  });

});

describe("quotas", () => {
  it("count the top-level kinds a tenant creates, named as the root document names them; children follow their parent", () => {
    expect(countedKinds(catalog).map((c) => `${c.collection} ${c.kind}`)).toEqual([
      "bridges bridge.Bridge",
      "chains policy.Chain",
      "load_balancer.health_monitors compat.CompatHealthMonitor",
      "load_balancer.members compat.CompatMember",
      "load_balancer.pools compat.CompatPool",
      "load_balancer.vips compat.CompatVip",
      "portGroups routing.PortGroup",
      "qosPolicies qos.QosPolicy",
      "routers routing.Router",
      "security_group_rules compat.CompatSecurityGroupRule",
    ]);
  });

  it("go stale at the gateway with any change of a kind they count, and with no other", () => {
    expect(catalog.affected(["bridge.Bridge:created"])).toContain("quota.Quota");
    expect(catalog.affected(["compat.CompatMember:deleted"])).toContain("quota.Quota");
    expect(catalog.affected(["policy.Rule:created"])).not.toContain("quota.Quota");
    expect(catalog.affected(["tunnel.Host:deleted"])).not.toContain("quota.Quota");
  });

  it("make the quota service a caller of the domains holding counted kinds (usage), and those domains its callers (limits)", () => {
    expect(peersOf(catalog, "quota")).toEqual(["bridge", "compat", "identity", "policy", "qos", "routing"]);
    for (const d of ["bridge", "compat", "policy", "qos", "routing"]) expect(peersOf(catalog, d), d).toContain("quota");
    for (const d of ["identity", "lb", "tracing", "tunnel"]) expect(peersOf(catalog, d), d).not.toContain("quota");
    // A domain that gets a kind a tenant creates must be named among GetLimits' callers, or its creates would be refused there.
    const callers = catalog.callers.get("vnm.quota.v1.QuotaService/GetLimits");
    for (const d of new Set(countedKinds(catalog).map((c) => c.domain))) expect(callers?.has(d), d).toBe(true);
  });
});
