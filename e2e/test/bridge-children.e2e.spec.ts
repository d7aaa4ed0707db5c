// End to end for everything under /bridges/:bridgeId (DHCP Host (v2), DHCPv6 Subnet (v1),
// MAC-Port (v2) and their endpoints; docs/api.md, "Path formats" and "Deletes and cascades", and
// docs/decisions.md, "Bridge children", for the DHCP subnet, the path formats and the cascades). Real processes, Postgres, NATS and Redis.
import { beforeEach, describe, expect, it } from "vitest";
import { expectError, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const JSON_TYPE = "application/json";
const PORT_A = "6b6d7d4e-0000-4000-8000-00000000000a";
const PORT_B = "6b6d7d4e-0000-4000-8000-00000000000b";

const fx = useStack();
const http = httpClient(() => fx.gw, JSON_TYPE, () => fx.stack.adminToken);

let bridge = ""; // id of a fresh bridge per test
let bridgeUri = "";


beforeEach(async () => {
  const r = await http("POST", "/bridges", { name: "parent", tenantId: "acme" });
  bridge = r.json.id;
  bridgeUri = r.json.uri;
});

const subnet = (over: Record<string, unknown> = {}) => ({ subnetPrefix: "10.0.0.0", subnetLength: 24, ...over });
const host = (over: Record<string, unknown> = {}) => ({ macAddr: "02:00:00:00:00:01", ipAddr: "10.0.0.10", name: "h1", ...over });

describe("the bridge's links resolve (api.md: Addresses and links)", () => {
  it("dhcpSubnets, dhcpSubnets6, macTable, ports, peerPorts, vxLanPorts and arpTable answer 200 with lists", async () => {
    const b = (await http("GET", bridgeUri)).json;
    for (const link of ["dhcpSubnets", "dhcpSubnets6", "macTable", "ports", "peerPorts", "vxLanPorts", "arpTable"]) {
      const r = await http("GET", b[link]);
      expect(r.status, link).toBe(200);
      expect(r.json, link).toEqual([]);
    }
    const vlan = await http("GET", b.vlanMacTableTemplate.replace("{vlanId}", "7"));
    expect(vlan.status).toBe(200);
    expect(vlan.json).toEqual([]);
  });

  it("each list under a missing bridge is a 404 with the error body", async () => {
    const gone = "00000000-0000-4000-8000-000000000000";
    for (const p of ["dhcp", "dhcpV6", "mac_table", "vlans/1/mac_table", "ports", "peer_ports", "vxlan_ports", "arp_table"]) {
      expectError(await http("GET", `/bridges/${gone}/${p}`), 404);
    }
  });
});

describe("DHCP subnets (DhcpSubnet-v2, api.md: Path formats)", () => {
  it("create, list, get, replace and delete at /bridges/:id/dhcp[/:subnetAddr]", async () => {
    const c = await http("POST", `/bridges/${bridge}/dhcp`, subnet({ defaultGateway: "10.0.0.1", dnsServerAddrs: ["8.8.8.8"] }), {
      "content-type": V("DhcpSubnet-v2"),
    });
    expect(c.status).toBe(201);
    expect(c.headers.get("content-type")).toBe(V("DhcpSubnet-v2"));
    const uri = `${fx.gw}/bridges/${bridge}/dhcp/10.0.0.0_24`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({
      subnetPrefix: "10.0.0.0",
      subnetLength: 24,
      defaultGateway: "10.0.0.1",
      serverAddr: null,
      dnsServerAddrs: ["8.8.8.8"],
      interfaceMTU: null,
      opt121Routes: [],
      enabled: true,
      uri,
      hosts: `${uri}/hosts`,
    });
    const list = await http("GET", `/bridges/${bridge}/dhcp`, undefined, { accept: V("collection.DhcpSubnet-v2") });
    expect(list.headers.get("content-type")).toBe(V("collection.DhcpSubnet-v2"));
    expect(list.json).toEqual([c.json]);
    expect((await http("GET", uri)).json).toEqual(c.json);

    const routes = [{ destinationPrefix: "192.168.0.0", destinationLength: 16, gatewayAddr: "10.0.0.1" }];
    const u = await http("PUT", uri, subnet({ interfaceMTU: 1450, opt121Routes: routes, enabled: false }));
    expect(u.status).toBe(200);
    expect(u.json).toMatchObject({ interfaceMTU: 1450, opt121Routes: routes, enabled: false, defaultGateway: null, dnsServerAddrs: [] });

    expect((await http("DELETE", uri)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expectError(await http("DELETE", uri), 404);
  });

  it("a second subnet with the same address on the bridge is a 409; on another bridge it is fine", async () => {
    expect((await http("POST", `/bridges/${bridge}/dhcp`, subnet())).status).toBe(201);
    expectError(await http("POST", `/bridges/${bridge}/dhcp`, subnet()), 409);
    const other = (await http("POST", "/bridges", {})).json.id;
    expect((await http("POST", `/bridges/${other}/dhcp`, subnet())).status).toBe(201);
  });

  it.each([
    [{ subnetPrefix: undefined }, "subnetPrefix"],
    [{ subnetLength: undefined }, "subnetLength"],
    [{ subnetPrefix: "10.0.0" }, "subnetPrefix"],
    [{ subnetPrefix: "321.4.5.6" }, "subnetPrefix"],
    [{ subnetLength: 33 }, "subnetLength"],
    [{ subnetLength: "abc" }, "subnetLength"],
    [{ defaultGateway: "nonsense" }, "defaultGateway"],
    [{ serverAddr: "1.2.3" }, "serverAddr"],
    [{ dnsServerAddrs: ["x"] }, "dnsServerAddrs"],
    [{ interfaceMTU: 70000 }, "interfaceMTU"],
    [{ opt121Routes: [{ destinationPrefix: "1.0.0.0", destinationLength: 40, gatewayAddr: "1.1.1.1" }] }, "opt121Routes"],
    [{ opt121Routes: [{ destinationPrefix: "1.0.0.0" }] }, "opt121Routes.destinationLength"],
    [{ enabled: "sometimes" }, "enabled"],
  ])("%j is a 400 naming %s", async (over, property) => {
    const r = await http("POST", `/bridges/${bridge}/dhcp`, subnet(over));
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toContain(property);
    expect((await http("GET", `/bridges/${bridge}/dhcp`)).json).toEqual([]);
  });

  it("a missing bridge is a 404 even with a bad body; a bad :subnetAddr is a 404", async () => {
    const gone = "00000000-0000-4000-8000-000000000000";
    expectError(await http("POST", `/bridges/${gone}/dhcp`, subnet()), 404);
    expectError(await http("POST", `/bridges/${gone}/dhcp`, subnet({ subnetLength: 99 })), 404);
    for (const seg of ["10.0.0.0_99", "nonsense", "10.0.0.0_24_1", "10.0.0.0_x"]) {
      expectError(await http("GET", `/bridges/${bridge}/dhcp/${seg}`), 404);
    }
  });

  it("a PUT that changes the prefix moves the subnet and its hosts; 409 if the new address is taken", async () => {
    await http("POST", `/bridges/${bridge}/dhcp`, subnet({ subnetLength: 16 }));
    await http("POST", `/bridges/${bridge}/dhcp/10.0.0.0_16/hosts`, host());
    await http("POST", `/bridges/${bridge}/dhcp`, subnet({ subnetPrefix: "10.9.0.0" }));
    expectError(await http("PUT", `/bridges/${bridge}/dhcp/10.0.0.0_16`, subnet({ subnetPrefix: "10.9.0.0" })), 409);
    // A move that would leave a host outside is refused too.
    expectError(await http("PUT", `/bridges/${bridge}/dhcp/10.0.0.0_16`, subnet({ subnetPrefix: "10.1.0.0" })), 409);
    const moved = await http("PUT", `/bridges/${bridge}/dhcp/10.0.0.0_16`, subnet());
    expect(moved.status).toBe(200);
    expect(moved.json.uri).toBe(`${fx.gw}/bridges/${bridge}/dhcp/10.0.0.0_24`);
    expectError(await http("GET", `/bridges/${bridge}/dhcp/10.0.0.0_16`), 404);
    const hosts = await http("GET", `${moved.json.hosts}`);
    expect(hosts.json.map((h: { uri: string }) => h.uri)).toEqual([`${moved.json.uri}/hosts/02:00:00:00:00:01`]);
  });
});

describe("DHCP hosts (DhcpHost-v2)", () => {
  const hostsOf = () => `/bridges/${bridge}/dhcp/10.0.0.0_24/hosts`;
  beforeEach(async () => {
    await http("POST", `/bridges/${bridge}/dhcp`, subnet());
  });

  it("create, list, get, replace and delete, addressed by MAC", async () => {
    const opts = [{ optName: "42", optValue: "10.0.0.1" }];
    const c = await http("POST", hostsOf(), host({ macAddr: "02:AA:00:00:00:01", extraDhcpOpts: opts }), {
      "content-type": V("DhcpHost-v2"),
    });
    expect(c.status).toBe(201);
    const uri = `${fx.gw}${hostsOf()}/02:aa:00:00:00:01`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ macAddr: "02:aa:00:00:00:01", ipAddr: "10.0.0.10", name: "h1", extraDhcpOpts: opts, uri });
    expect((await http("GET", hostsOf(), undefined, { accept: V("collection.DhcpHost-v2") })).json).toEqual([c.json]);
    expect((await http("GET", uri)).json).toEqual(c.json);
    // The '-' form of the MAC is accepted in the path too.
    expect((await http("GET", `${hostsOf()}/02-aa-00-00-00-01`)).json).toEqual(c.json);

    const u = await http("PUT", uri, host({ macAddr: "02:aa:00:00:00:01", ipAddr: "10.0.0.11", name: "renamed" }));
    expect(u.status).toBe(200);
    expect(u.json).toMatchObject({ ipAddr: "10.0.0.11", name: "renamed", extraDhcpOpts: [] });

    expect((await http("DELETE", uri)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expectError(await http("DELETE", uri), 404);
  });

  it("one host per MAC per subnet: a duplicate is a 409", async () => {
    expect((await http("POST", hostsOf(), host())).status).toBe(201);
    const dup = await http("POST", hostsOf(), host({ ipAddr: "10.0.0.99", name: "other" }));
    expectError(dup, 409);
    expect(dup.json.message).toContain("02:00:00:00:00:01");
  });

  it("50 parallel creates of the same MAC yield exactly one 201 and 49 409s", async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => http("POST", hostsOf(), host({ macAddr: "02:00:00:00:00:50", name: `h${i}` }))),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(49);
    expect((await http("GET", hostsOf())).json).toHaveLength(1);
  });

  it.each([
    [{ macAddr: undefined }, "macAddr"],
    [{ ipAddr: undefined }, "ipAddr"],
    [{ name: undefined }, "name"],
    [{ macAddr: "02:11:NONSENSE" }, "macAddr"],
    [{ macAddr: "2:0:0:0:0:1" }, "macAddr"],
    [{ ipAddr: "10.0.0.256" }, "ipAddr"],
    [{ ipAddr: "10.0.1.10" }, "ipAddr"],
    [{ extraDhcpOpts: [{ optName: "42" }] }, "extraDhcpOpts.optValue"],
    [{ extraDhcpOpts: "42=1" }, "extraDhcpOpts"],
  ])("%j is a 400 naming %s", async (over, property) => {
    const r = await http("POST", hostsOf(), host(over));
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toContain(property);
  });

  it("an address outside the subnet says which subnet", async () => {
    const r = await http("POST", hostsOf(), host({ ipAddr: "192.168.1.1" }));
    expect(r.json.violations).toEqual([{ property: "ipAddr", message: "must lie inside the subnet 10.0.0.0/24" }]);
  });

  it("a missing subnet is a 404, before the body is judged", async () => {
    expectError(await http("POST", `/bridges/${bridge}/dhcp/10.5.0.0_24/hosts`, host()), 404);
    expectError(await http("POST", `/bridges/${bridge}/dhcp/10.5.0.0_24/hosts`, host({ macAddr: "x" })), 404);
    expectError(await http("GET", `/bridges/${bridge}/dhcp/10.5.0.0_24/hosts`), 404);
    expectError(await http("GET", `${hostsOf()}/not-a-mac`), 404);
    expectError(await http("PUT", `${hostsOf()}/02:00:00:00:00:99`, host({ macAddr: "bad" })), 404);
  });

  it("a PUT may move the host to another MAC, 409 if that MAC is taken", async () => {
    await http("POST", hostsOf(), host());
    await http("POST", hostsOf(), host({ macAddr: "02:00:00:00:00:02", ipAddr: "10.0.0.12" }));
    expectError(await http("PUT", `${hostsOf()}/02:00:00:00:00:01`, host({ macAddr: "02:00:00:00:00:02" })), 409);
    const moved = await http("PUT", `${hostsOf()}/02:00:00:00:00:01`, host({ macAddr: "02:00:00:00:00:03" }));
    expect(moved.status).toBe(200);
    expect(moved.json.uri).toBe(`${fx.gw}${hostsOf()}/02:00:00:00:00:03`);
    expectError(await http("GET", `${hostsOf()}/02:00:00:00:00:01`), 404);
  });
});

describe("DHCPv6 subnets (DhcpV6Subnet-v1)", () => {
  it("accepts any valid IPv6 form and answers in compressed form, in the body and the URI", async () => {
    const c = await http("POST", `/bridges/${bridge}/dhcpV6`, { prefix: "2001:0DB8:0000:0000:0000:0000:0000:0000", prefixLength: 64 }, {
      "content-type": V("DhcpV6Subnet-v1"),
    });
    expect(c.status).toBe(201);
    const uri = `${fx.gw}/bridges/${bridge}/dhcpV6/2001:db8::_64`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ prefix: "2001:db8::", prefixLength: 64, uri, hosts: `${uri}/hosts` });
    expect((await http("GET", uri)).json).toEqual(c.json);
    // Any spelling of the address finds it.
    expect((await http("GET", `/bridges/${bridge}/dhcpV6/2001:db8:0:0::0_64`)).status).toBe(200);
    const hosts = await http("GET", c.json.hosts, undefined, { accept: V("collection.DhcpV6Host-v1") });
    expect(hosts.status).toBe(200);
    expect(hosts.json).toEqual([]);
    expect((await http("GET", `/bridges/${bridge}/dhcpV6`)).json).toEqual([c.json]);
    expectError(await http("POST", `/bridges/${bridge}/dhcpV6`, { prefix: "2001:db8::", prefixLength: 64 }), 409);

    const moved = await http("PUT", uri, { prefix: "dead:beef::", prefixLength: 48 });
    expect(moved.status).toBe(200);
    expect(moved.json.uri).toBe(`${fx.gw}/bridges/${bridge}/dhcpV6/dead:beef::_48`);
    expectError(await http("GET", uri), 404);
    expect((await http("DELETE", moved.json.uri)).status).toBe(204);
    expectError(await http("DELETE", moved.json.uri), 404);
  });

  it.each([
    [{ prefix: "abcd::1234::", prefixLength: 64 }, "prefix"],
    [{ prefix: "10.0.0.0", prefixLength: 64 }, "prefix"],
    [{ prefix: "fe80::1%eth0", prefixLength: 64 }, "prefix"],
    [{ prefix: "2001:db8::", prefixLength: 129 }, "prefixLength"],
    [{ prefix: "2001:db8::", prefixLength: -1 }, "prefixLength"],
    [{ prefixLength: 64 }, "prefix"],
    [{ prefix: "2001:db8::" }, "prefixLength"],
  ])("%j is a 400 naming %s", async (body, property) => {
    const r = await http("POST", `/bridges/${bridge}/dhcpV6`, body);
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toContain(property);
  });

  it("prefix lengths 0 and 128 are accepted", async () => {
    expect((await http("POST", `/bridges/${bridge}/dhcpV6`, { prefix: "::", prefixLength: 0 })).status).toBe(201);
    expect((await http("POST", `/bridges/${bridge}/dhcpV6`, { prefix: "::1", prefixLength: 128 })).status).toBe(201);
  });
});

describe("MAC table (MacPort-v2)", () => {
  const pair = (m: string, p: string) => `${m.replace(/:/g, "-")}_${p}`;

  it("plain form: create on VLAN 0, get, list, delete; uri uses '-' in the MAC", async () => {
    const c = await http("POST", `/bridges/${bridge}/mac_table`, { macAddr: "02:AB:00:00:00:01", portId: PORT_A, vlanId: 9 }, {
      "content-type": V("MacPort-v2"),
    });
    expect(c.status).toBe(201);
    const uri = `${fx.gw}/bridges/${bridge}/mac_table/${pair("02:ab:00:00:00:01", PORT_A)}`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ macAddr: "02:ab:00:00:00:01", portId: PORT_A, vlanId: 0, uri });
    expect((await http("GET", uri)).json).toEqual(c.json);
    // The ':' form of the pair is accepted too.
    expect((await http("GET", `/bridges/${bridge}/mac_table/02:ab:00:00:00:01_${PORT_A}`)).status).toBe(200);
    expect((await http("GET", `/bridges/${bridge}/mac_table`, undefined, { accept: V("collection.MacPort-v2") })).json).toEqual([c.json]);
    expect((await http("DELETE", uri)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expectError(await http("DELETE", uri), 404);
  });

  it("VLAN form: the path VLAN wins, the plain list shows every VLAN, the VLAN list only its own", async () => {
    const v5 = await http("POST", `/bridges/${bridge}/vlans/5/mac_table`, { macAddr: "02:00:00:00:00:05", portId: PORT_A, vlanId: 2 });
    expect(v5.status).toBe(201);
    const uri = `${fx.gw}/bridges/${bridge}/vlans/5/mac_table/${pair("02:00:00:00:00:05", PORT_A)}`;
    expect(v5.json).toMatchObject({ vlanId: 5, uri });
    expect(v5.headers.get("location")).toBe(uri);
    const v0 = await http("POST", `/bridges/${bridge}/mac_table`, { macAddr: "02:00:00:00:00:00", portId: PORT_B });
    const all = (await http("GET", `/bridges/${bridge}/mac_table`)).json;
    expect(all.map((e: { vlanId: number }) => e.vlanId)).toEqual([0, 5]);
    expect((await http("GET", `/bridges/${bridge}/vlans/5/mac_table`)).json).toEqual([v5.json]);
    expect((await http("GET", `/bridges/${bridge}/vlans/0/mac_table`)).json).toEqual([v0.json]);
    // The entry lives on VLAN 5 only.
    expectError(await http("GET", `/bridges/${bridge}/mac_table/${pair("02:00:00:00:00:05", PORT_A)}`), 404);
    expect((await http("GET", uri)).status).toBe(200);
    expect((await http("DELETE", uri)).status).toBe(204);
  });

  it("a query string cannot set what the path decides: ?vlanId= on a POST is a 400; on the list it filters", async () => {
    const r = await http("POST", `/bridges/${bridge}/mac_table?vlanId=5`, { macAddr: "02:00:00:00:00:0e", portId: PORT_A });
    expectError(r, 400);
    expect(r.json.violations).toEqual([{ property: "vlanId", message: "is not a parameter of this request" }]);
    const all = (await http("GET", `/bridges/${bridge}/mac_table`)).json as { vlanId: number; macAddr: string }[];
    expect(all.some((e) => e.macAddr === "02:00:00:00:00:0e")).toBe(false);
    const g = await http("GET", `/bridges/${bridge}/mac_table?vlanId=5`);
    expect(g.json).toEqual(all.filter((e) => e.vlanId === 5));
  });

  it("the same MAC may map to two ports; the same MAC-port pair twice is a 409", async () => {
    expect((await http("POST", `/bridges/${bridge}/mac_table`, { macAddr: "02:00:00:00:00:07", portId: PORT_A })).status).toBe(201);
    expect((await http("POST", `/bridges/${bridge}/mac_table`, { macAddr: "02:00:00:00:00:07", portId: PORT_B })).status).toBe(201);
    expectError(await http("POST", `/bridges/${bridge}/mac_table`, { macAddr: "02:00:00:00:00:07", portId: PORT_A }), 409);
    expect((await http("POST", `/bridges/${bridge}/vlans/3/mac_table`, { macAddr: "02:00:00:00:00:07", portId: PORT_A })).status).toBe(201);
  });

  it("no PUT: 405 with Allow on both forms", async () => {
    const p = `/bridges/${bridge}/mac_table/${pair("02:00:00:00:00:01", PORT_A)}`;
    const r = await http("PUT", p, { macAddr: "02:00:00:00:00:01", portId: PORT_A });
    expectError(r, 405);
    expect(r.headers.get("allow")).toBe("GET, DELETE");
    expect((await http("PUT", `/bridges/${bridge}/vlans/2/mac_table/${pair("02:00:00:00:00:01", PORT_A)}`, {})).headers.get("allow")).toBe(
      "GET, DELETE",
    );
  });

  it.each([
    [{ macAddr: "02:11:NONSENSE", portId: PORT_A }, "macAddr"],
    [{ portId: PORT_A }, "macAddr"],
    [{ macAddr: "02:00:00:00:00:01" }, "portId"],
    [{ macAddr: "02:00:00:00:00:01", portId: "not-a-uuid" }, "portId"],
  ])("%j is a 400 naming %s", async (body, property) => {
    const r = await http("POST", `/bridges/${bridge}/mac_table`, body);
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toContain(property);
  });

  it("a VLAN outside [0, 4095] or a malformed pair names nothing: 404", async () => {
    expectError(await http("GET", `/bridges/${bridge}/vlans/4096/mac_table`), 404);
    expectError(await http("GET", `/bridges/${bridge}/vlans/abc/mac_table`), 404);
    expectError(await http("POST", `/bridges/${bridge}/vlans/-1/mac_table`, { macAddr: "02:00:00:00:00:01", portId: PORT_A }), 404);
    expectError(await http("GET", `/bridges/${bridge}/mac_table/02-00-00-00-00-01`), 404);
    expectError(await http("GET", `/bridges/${bridge}/mac_table/zz_${PORT_A}`), 404);
    expectError(await http("POST", `/bridges/00000000-0000-4000-8000-000000000000/vlans/2/mac_table`, { macAddr: "x" }), 404);
  });
});

describe("the rules of each field (dhcp.proto, mac_table.proto), as the OpenAPI document states them and the service enforces them", () => {
  /** A field's schema keywords, whatever alternatives (a digit string for an integer, null) the document adds. */
  const keywords = (s: { anyOf?: object[] }) => Object.assign({}, ...(s.anyOf ?? []), s);
  const schemas = async () => (await http("GET", "/openapi.json")).json.components.schemas;

  it("DHCP subnets: IPv4 addresses, a length in [0, 32], an MTU in [0, 65536], at most 16 DNS servers and 64 option-121 routes", async () => {
    const all = await schemas();
    const s = all["vnm.bridge.v1.DhcpSubnet"].properties;
    for (const f of ["subnetPrefix", "defaultGateway", "serverAddr"]) expect(keywords(s[f]), f).toMatchObject({ format: "ipv4" });
    expect(keywords(s.subnetLength)).toMatchObject({ minimum: 0, maximum: 32 });
    expect(keywords(s.interfaceMTU)).toMatchObject({ minimum: 0, maximum: 65536 });
    expect(s.dnsServerAddrs).toMatchObject({ maxItems: 16, items: { format: "ipv4" } });
    expect(s.opt121Routes).toMatchObject({ maxItems: 64 });
    expect(keywords(all["vnm.bridge.v1.Opt121Route"].properties.destinationLength)).toMatchObject({ minimum: 0, maximum: 32 });
    const cases: [Record<string, unknown>, string, string][] = [
      [{ subnetPrefix: "321.4.5.6" }, "subnetPrefix", "must be a valid IPv4 address"],
      [{ subnetLength: 33 }, "subnetLength", "must be greater than or equal to 0 and less than or equal to 32"],
      [{ interfaceMTU: 70000 }, "interfaceMTU", "must be greater than or equal to 0 and less than or equal to 65536"],
      [{ dnsServerAddrs: Array(17).fill("8.8.8.8") }, "dnsServerAddrs", "must contain no more than 16 item(s)"],
    ];
    for (const [over, property, message] of cases) {
      const r = await http("POST", `/bridges/${bridge}/dhcp`, subnet(over));
      expectError(r, 400);
      expect(r.json.violations, property).toEqual([{ property, message }]);
    }
  });

  it("DHCP hosts: a MAC, an IPv4 address, a name of at most 255 characters, at most 64 options", async () => {
    await http("POST", `/bridges/${bridge}/dhcp`, subnet());
    const h = (await schemas())["vnm.bridge.v1.DhcpHost"].properties;
    expect(keywords(h.macAddr)).toMatchObject({ pattern: "^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$" });
    expect(keywords(h.ipAddr)).toMatchObject({ format: "ipv4" });
    expect(keywords(h.name)).toMatchObject({ maxLength: 255 });
    expect(h.extraDhcpOpts).toMatchObject({ maxItems: 64 });
    const r = await http("POST", `/bridges/${bridge}/dhcp/10.0.0.0_24/hosts`, host({ name: "x".repeat(256) }));
    expectError(r, 400);
    expect(r.json.violations).toEqual([{ property: "name", message: "must be at most 255 characters" }]);
  });

  it("DHCPv6 subnets: an IPv6 address with no zone, a length in [0, 128]; MAC table entries: a MAC and a UUID port", async () => {
    const all = await schemas();
    const v6 = all["vnm.bridge.v1.DhcpV6Subnet"].properties;
    expect(keywords(v6.prefix)).toMatchObject({ format: "ipv6", pattern: "^[^%]*$" });
    expect(keywords(v6.prefixLength)).toMatchObject({ minimum: 0, maximum: 128 });
    const mt = all["vnm.bridge.v1.MacPort"].properties;
    expect(keywords(mt.macAddr)).toMatchObject({ pattern: "^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$" });
    expect(keywords(mt.portId)).toMatchObject({ format: "uuid" });
    const len = await http("POST", `/bridges/${bridge}/dhcpV6`, { prefix: "2001:db8::", prefixLength: 129 });
    expectError(len, 400);
    expect(len.json.violations).toEqual([{ property: "prefixLength", message: "must be greater than or equal to 0 and less than or equal to 128" }]);
  });
});

describe("deleting a bridge (api.md: Deletes and cascades)", () => {
  it("removes its subnets, hosts, DHCPv6 subnets and MAC entries, and the change feed says so", async () => {
    await http("POST", `/bridges/${bridge}/dhcp`, subnet());
    await http("POST", `/bridges/${bridge}/dhcp/10.0.0.0_24/hosts`, host());
    await http("POST", `/bridges/${bridge}/dhcpV6`, { prefix: "2001:db8::", prefixLength: 64 });
    await http("POST", `/bridges/${bridge}/vlans/4/mac_table`, { macAddr: "02:00:00:00:00:04", portId: PORT_A });
    // Fill the cache of a child collection of another bridge, to see it is invalidated too.
    const other = (await http("POST", "/bridges", {})).json.id;
    expect((await http("GET", `/bridges/${other}/dhcp`)).json).toEqual([]);

    expect((await http("DELETE", `/bridges/${bridge}`)).status).toBe(204);
    for (const p of ["dhcp", "dhcp/10.0.0.0_24", "dhcp/10.0.0.0_24/hosts", "dhcpV6", "mac_table", "vlans/4/mac_table"]) {
      expectError(await http("GET", `/bridges/${bridge}/${p}`), 404);
    }
    const kinds = () =>
      fx.events
        .filter((e) => String(e.data["path"]).startsWith(`/bridges/${bridge}`) && e.subject.endsWith(".deleted"))
        .map((e) => e.data["kind"]);
    await waitFor("cascade events", async () => kinds().length >= 5, 5_000);
    expect(kinds().sort()).toEqual(["Bridge", "DhcpHost", "DhcpSubnet", "DhcpV6Subnet", "MacPort"]);
    const hostEvent = fx.events.find((e) => e.data["kind"] === "DhcpHost" && String(e.data["path"]).startsWith(`/bridges/${bridge}`));
    expect(hostEvent?.data).toMatchObject({ path: `/bridges/${bridge}/dhcp/10.0.0.0_24/hosts/02:00:00:00:00:01`, tenantId: "acme" });
  });

  it("a child created after the bridge is gone is a 404, and nothing is left behind", async () => {
    await http("DELETE", `/bridges/${bridge}`);
    expectError(await http("POST", `/bridges/${bridge}/dhcp`, subnet()), 404);
    expectError(await http("POST", `/bridges/${bridge}/mac_table`, { macAddr: "02:00:00:00:00:01", portId: PORT_A }), 404);
  });
});

describe("cached child collections read their own writes", () => {
  it("a cached empty child list of a deleted bridge answers 404, not the stale []", async () => {
    for (const p of ["dhcp", "mac_table", "ports"]) {
      expect((await http("GET", `/bridges/${bridge}/${p}`)).json).toEqual([]);
      expect((await http("GET", `/bridges/${bridge}/${p}`)).json).toEqual([]);
    }
    await http("DELETE", `/bridges/${bridge}`);
    for (const p of ["dhcp", "mac_table", "ports"]) expectError(await http("GET", `/bridges/${bridge}/${p}`), 404);
  });

  it("a host list served from the cache shows a new host at once", async () => {
    await http("POST", `/bridges/${bridge}/dhcp`, subnet());
    const list = () => http("GET", `/bridges/${bridge}/dhcp/10.0.0.0_24/hosts`);
    expect((await list()).json).toEqual([]);
    expect((await list()).json).toEqual([]);
    await http("POST", `/bridges/${bridge}/dhcp/10.0.0.0_24/hosts`, host());
    expect((await list()).json).toHaveLength(1);
    await http("DELETE", `/bridges/${bridge}/dhcp/10.0.0.0_24`);
    expectError(await list(), 404);
  });
});
