// The console's catalog as the build makes it: a field whose values the proto closes offers
// exactly those values (a choice, not free text), whether the proto states them as a rule
// (`string.in`) or a service's declaration still does.
import { expect, it } from "vitest";
import { consoleCatalog } from "../catalog.ts";

it("offers the values a field's rules in the proto allow", async () => {
  const c = await consoleCatalog();
  const values = (kind: string, field: string) => c.kinds.find((k) => k.kind === kind)?.fields.find((f) => f.name === field)?.enumValues;
  expect(values("lb.Pool", "lbMethod")).toEqual(["ROUND_ROBIN"]);
  expect(values("lb.Pool", "protocol")).toEqual(["TCP"]);
  expect(values("lb.HealthMonitor", "type")).toEqual(["TCP"]);
  expect(values("tracing.TraceRequest", "deviceType")).toEqual(["BRIDGE", "PORT", "ROUTER"]);
  expect(values("tunnel.TunnelZone", "type")).toEqual(["gre", "vxlan", "vtep"]);
  expect(values("qos.QosPolicy", "name")).toBeUndefined();
});

it("knows which kind a field holding another item's id (or a list of ids) names: from the message's link to it, else from its name", async () => {
  const c = await consoleCatalog();
  const kind = (k: string) => c.kinds.find((x) => x.kind === k)!;
  const ref = (k: string, field: string) => kind(k).fields.find((f) => f.name === field)?.ref;
  // Links: a port's `peer` is /ports/{peerId}, its `host` /hosts/{hostId}; a binding's `port` /ports/{portId}.
  expect(ref("routing.Port", "peerId")).toBe("routing.Port");
  expect(ref("routing.Port", "hostId")).toBe("tunnel.Host");
  expect(ref("routing.HostInterfacePort", "portId")).toBe("routing.Port");
  expect(ref("routing.Router", "loadBalancerId")).toBe("lb.LoadBalancer");
  // Names: a route's next hop port has no link; compat's pool_id is its own domain's pool.
  expect(ref("routing.Route", "nextHopPort")).toBe("routing.Port");
  expect(ref("compat.CompatMember", "pool_id")).toBe("compat.CompatPool");
  // A chain, served by the policy service since issue 52: a router's filter names it.
  expect(ref("routing.Router", "inboundFilterId")).toBe("policy.Chain");
  // Neither: a tenant, a port's device (its `device` link is a template of the device's path).
  for (const [k, f] of [
    ["routing.Router", "tenantId"],
    ["routing.Port", "deviceId"],
    ["routing.Port", "id"],
  ] as const)
    expect(ref(k, f), `${k}.${f}`).toBeUndefined();
  // Lists of ids (issue 55): a list whose items the proto says are UUIDs, or whose name ends in
  // "Ids", named by its name less "Ids" or made singular; a list of other values names nothing.
  expect(ref("bridge.Bridge", "inboundMirrorIds")).toBe("policy.Mirror");
  expect(ref("routing.Port", "outboundMirrorIds")).toBe("policy.Mirror");
  expect(ref("bridge.Bridge", "vxlanPortIds")).toBe("routing.Port");
  expect(ref("policy.Rule", "inPorts")).toBe("routing.Port");
  expect(ref("policy.Rule", "outPorts")).toBe("routing.Port");
  expect(ref("compat.CompatPool", "members")).toBe("compat.CompatMember");
  for (const [k, f] of [
    ["identity.User", "roles"],
    ["bridge.DhcpSubnet", "dnsServerAddrs"],
    ["tunnel.Host", "addresses"],
  ] as const)
    expect(ref(k, f), `${k}.${f}`).toBeUndefined();
  // A port is made on a router or a bridge: both paths, each variable naming its kind.
  expect(kind("routing.Port").createTemplates).toEqual(["/routers/{routerId}/ports", "/bridges/{bridgeId}/ports"]);
  expect(kind("routing.Port").pathRefs).toEqual({ routerId: "routing.Router", bridgeId: "bridge.Bridge" });
});

it("names each kind once, knows each list's filters and the kind of a linked collection's items, and keeps the defaults of a Resource made from its service's context", async () => {
  const c = await consoleCatalog();
  const kind = (k: string) => c.kinds.find((x) => x.kind === k)!;
  const plurals = c.kinds.map((k) => k.plural);
  expect(plurals.filter((p, i) => plurals.indexOf(p) !== i)).toEqual([]);
  expect(kind("compat.CompatPool").plural).toBe("Compat pools");
  expect(kind("lb.Pool").plural).toBe("Pools");
  // docs/api.md "Filters": every scalar field shown, not a link, a list or JSON.
  expect(kind("bridge.Bridge").filters).toEqual(expect.arrayContaining(["name", "adminStateUp", "tenantId", "inboundFilterId"]));
  expect(kind("bridge.Bridge").filters).not.toContain("inboundMirrorIds");
  // A router names mirrors as a bridge does (policy.md §4): the same two lists, offered alike.
  const mirrorLists = (k: string) => kind(k).fields.filter((f) => f.name.endsWith("MirrorIds"));
  expect(mirrorLists("routing.Router").map((f) => f.name)).toEqual(["inboundMirrorIds", "outboundMirrorIds"]);
  expect(mirrorLists("routing.Router")).toEqual(mirrorLists("bridge.Bridge"));
  expect(kind("routing.Router").filters).not.toContain("inboundMirrorIds");
  expect(kind("lb.LoadBalancer").linkedLists.find((l) => l.title === "Pools")?.kind).toBe("lb.Pool");
  expect(kind("policy.Chain").linkedLists.find((l) => l.title === "Rules")?.kind).toBe("policy.Rule");
  // The bridge service makes its Resource from its context (policy references): its defaults stay.
  expect(kind("bridge.Bridge").fields.find((f) => f.name === "adminStateUp")?.default).toBe(true);
});
