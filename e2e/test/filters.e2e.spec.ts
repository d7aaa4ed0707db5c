// Every filter the API document lists for a collection is served: for each list of a bridge's
// children and a router's routes, each documented filter (a `?field=` parameter described as "A
// filter") with the value an item has keeps that item, and with another value drops it. A
// documented filter the server refuses (a 400 "is not a filter of this list") is a lie in the
// document.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpClient, Stack, waitFor } from "../harness/harness.ts";
import { OvsdbServer } from "../harness/ovsdb-server.ts";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);

type Param = { name: string; in: string; description?: string; schema?: { type?: unknown; anyOf?: { type?: string }[] } };
let doc: { paths: Record<string, { get?: { parameters?: Param[] } }> };

const ROUTER = "6a1c5a1e-0b7e-4c57-9d8c-3a2f4b6c7d80";
const PORT = "6a1c5a1e-0b7e-4c57-9d8c-3a2f4b6c7d81";
let lists: string[] = [];
let device: OvsdbServer | undefined;

beforeAll(async () => {
  await stack.startServices("bridge", "routing", "identity", "tunnel", "lb", "qos", "policy");
  gw = await stack.startGateway({ VNM_RATE_LIMIT: "0" }, false);
  doc = (await http("GET", "/openapi.json")).json;
  const bridge = (await http("POST", "/bridges", { name: "filtered", tenantId: "filters" })).json;
  const b = `/bridges/${bridge.id}`;
  // A router with a port (the route's next hop), linked to a port of the bridge: every list of
  // ports, peer ports included, has an item.
  const router = await http("POST", "/routers", { id: ROUTER, name: "filtered", tenantId: "filters", asNumber: 65000 });
  const routerPort = await http("POST", `/routers/${ROUTER}/ports`, { id: PORT, portAddress: "10.9.1.1", networkAddress: "10.9.1.0", networkLength: 24, portMac: "02:00:00:00:09:09" });
  const bridgePort = await http("POST", `${b}/ports`, { vlanId: 9 });
  const link = await http("POST", `/ports/${PORT}/link`, { peerId: bridgePort.json.id });
  const made = [
    router,
    routerPort,
    bridgePort,
    link,
    await http("POST", `${b}/dhcp`, { subnetPrefix: "10.9.0.0", subnetLength: 24, defaultGateway: "10.9.0.1", serverAddr: "10.9.0.2", interfaceMTU: 1400 }),
    await http("POST", `${b}/dhcp/10.9.0.0_24/hosts`, { macAddr: "02:00:00:00:09:01", ipAddr: "10.9.0.10", name: "h1" }),
    await http("POST", `${b}/dhcpV6`, { prefix: "fd00:9::", prefixLength: 64 }),
    await http("POST", `${b}/mac_table`, { macAddr: "02:00:00:00:09:02", portId: PORT }),
    await http("POST", `${b}/vlans/7/mac_table`, { macAddr: "02:00:00:00:09:03", portId: PORT }),
    await http("POST", `${b}/arp_table`, { ip: "10.9.0.20", mac: "02:00:00:00:09:04" }),
    await http("POST", `/routers/${ROUTER}/routes`, { type: "Normal", dstNetworkAddr: "10.10.0.0", dstNetworkLength: 16, srcNetworkAddr: "0.0.0.0", srcNetworkLength: 0, nextHopGateway: "10.9.0.1", nextHopPort: PORT, weight: 100 }),
  ];
  const group = (await http("POST", "/ip_addr_groups", { name: "filtered" })).json;
  made.push(await http("POST", `/ip_addr_groups/${group.id}/ip_addrs`, { version: 4, addr: "10.9.0.30" }));
  const portGroup = (await http("POST", "/port_groups", { name: "filtered", tenantId: "filters", stateful: true })).json;
  const memberPort = (await http("POST", `${b}/ports`, {})).json;
  made.push(await http("POST", `/port_groups/${portGroup.id}/ports`, { portId: memberPort.id }));
  // A host in a zone, with a port bound to it.
  const host = (await http("POST", "/hosts", { name: "filtered", addresses: ["10.9.0.40"] })).json;
  const zone = (await http("POST", "/tunnel_zones", { name: "filtered", type: "vxlan" })).json;
  made.push(await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: host.id, ipAddress: "10.9.0.41" }));
  const port = (await http("POST", `${b}/ports`, {})).json;
  made.push(await http("POST", `/hosts/${host.id}/ports`, { portId: port.id, interfaceName: "tap-filtered" }));
  // A pool's member and VIP, a QoS policy's rules.
  const lb = (await http("POST", "/load_balancers", {})).json;
  const pool = (await http("POST", "/pools", { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN" })).json;
  made.push(await http("POST", "/pool_members", { poolId: pool.id, address: "10.9.0.50", protocolPort: 80, weight: 3 }));
  made.push(await http("POST", "/vips", { poolId: pool.id, address: "10.9.0.51", protocolPort: 443, sessionPersistence: "SOURCE_IP" }));
  const qos = (await http("POST", "/qos_policies", { name: "filtered", tenantId: "filters" })).json;
  made.push(await http("POST", `/qos_policies/${qos.id}/qos_bw_limit_rules`, { maxKbps: 100, maxBurstKb: 10 }));
  made.push(await http("POST", `/qos_policies/${qos.id}/qos_dscp_rules`, { dscpMark: 46 }));
  // A chain with a rule, and a mirror to the router's port.
  const chain = (await http("POST", "/chains", { name: "filtered", tenantId: "filters" })).json;
  made.push(await http("POST", `/chains/${chain.id}/rules`, { type: "drop", nwSrcAddress: "10.9.0.0", nwSrcLength: 24, dlSrc: "02:00:00:00:09:05", tpDst: { start: 80, end: 80 } }));
  made.push(await http("POST", "/mirrors", { toPortId: PORT, conditions: [{ nwProto: 6 }] }));
  // A VTEP's binding of its device's port to the bridge, and so the bridge's VXLAN port.
  device = await OvsdbServer.create();
  device.ctl("add-ps", "sw-filtered");
  device.ctl("set", "Physical_Switch", "sw-filtered", "management_ips=127.0.0.1");
  device.ctl("add-port", "sw-filtered", "eth0");
  const vzone = (await http("POST", "/tunnel_zones", { name: "filtered-vtep", type: "vtep" })).json;
  const vtep = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: vzone.id })).json;
  await waitFor("the VTEP's port", async () => (await http("GET", `${vtep.uri}/ports`)).json.length === 1, 20_000);
  made.push(await http("POST", `/vteps/${vtep.id}/bindings`, { portName: "eth0", vlanId: 9, networkId: bridge.id }));
  await waitFor("the bridge's VXLAN port", async () => (await http("GET", `${b}/vxlan_ports`)).json.length === 1, 20_000);
  for (const r of made) expect(r.status, r.text).toBe(201);
  lists = [`${b}/dhcp`, `${b}/dhcp/10.9.0.0_24/hosts`, `${b}/dhcpV6`, `${b}/mac_table`, `${b}/vlans/7/mac_table`, `${b}/arp_table`, "/ip_addr_groups", `/ip_addr_groups/${group.id}/ip_addrs`, "/port_groups", `/port_groups/${portGroup.id}/ports`, `/ports/${memberPort.id}/port_groups`, "/hosts", `/tunnel_zones/${zone.id}/hosts`, `/hosts/${host.id}/ports`, `/routers/${ROUTER}/routes`];
  lists.push("/routers", `/routers/${ROUTER}/ports`, `/routers/${ROUTER}/peer_ports`, "/ports", `${b}/ports`, `${b}/peer_ports`);
  const q = `/qos_policies/${qos.id}`;
  lists.push("/pool_members", `/pools/${pool.id}/pool_members`, "/vips", `/pools/${pool.id}/vips`, `/load_balancers/${lb.id}/vips`);
  lists.push(`${q}/qos_bw_limit_rules`, `${q}/qos_dscp_rules`, "/qos_bw_limit_rules", "/qos_dscp_rules");
  lists.push(`/vteps/${vtep.id}/bindings`, `${b}/vxlan_ports`);
  lists.push("/chains", `/chains/${chain.id}/rules`, "/mirrors");
});
afterAll(async () => {
  await stack.stop();
  await device?.destroy();
});

/** The documented template of a concrete path: the path whose segments match, variables standing for any. */
function templateOf(path: string): string {
  const segs = path.split("/");
  const found = Object.keys(doc.paths).find((t) => {
    const ts = t.split("/");
    return ts.length === segs.length && ts.every((s, i) => s.startsWith("{") || s === segs[i]);
  });
  if (!found) throw new Error(`no documented path for ${path}`);
  return found;
}

/** A value of the same type that the item does not have. */
function other(v: unknown): string {
  if (typeof v === "boolean") return String(!v);
  if (typeof v === "number") return String(v + 1);
  return typeof v === "string" && /^[0-9a-f:]+$/i.test(v) && v.includes(":") ? "02:00:00:00:00:ff" : "not-this-one";
}

describe("every documented filter of a list", () => {
  it("keeps the items whose field has the value, and drops the others", async () => {
    let checked = 0;
    for (const list of lists) {
      const params = (doc.paths[templateOf(list)]?.get?.parameters ?? []).filter((p) => p.in === "query" && p.description?.startsWith("A filter"));
      expect(params.length, list).toBeGreaterThan(0);
      const items = (await http("GET", list)).json as Record<string, unknown>[];
      expect(items.length, list).toBeGreaterThan(0);
      const item = items[0]!;
      for (const { name } of params) {
        if (item[name] === null || item[name] === undefined) continue;
        const value = String(item[name]);
        const hit = await http("GET", `${list}?${name}=${encodeURIComponent(value)}`);
        expect(hit.status, `${list}?${name}=${value}: ${hit.text}`).toBe(200);
        expect(hit.json, `${list}?${name}=${value}`).toContainEqual(item);
        expect((hit.json as Record<string, unknown>[]).every((i) => String(i[name]) === value), `${list}?${name}=${value}`).toBe(true);
        const miss = await http("GET", `${list}?${name}=${encodeURIComponent(other(item[name]))}`);
        expect([200, 400], `${list}?${name}: ${miss.text}`).toContain(miss.status);
        if (miss.status === 400) expect(miss.text).not.toMatch(/is not a filter of this list/);
        else expect(miss.json, `${list}?${name}=${other(item[name])}`).not.toContainEqual(item);
        checked++;
      }
    }
    // subnetPrefix, subnetLength, interfaceMTU, macAddr, ipAddr, prefixLength, learned among them.
    expect(checked).toBeGreaterThanOrEqual(20);
  });

  it("matches a MAC whatever its case, as the field keeps it", async () => {
    const r = await http("GET", `${lists[3]}?macAddr=${"02:00:00:00:09:02".toUpperCase()}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toHaveLength(1);
  });
});
