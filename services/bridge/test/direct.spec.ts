// The bridge service reached directly over gRPC (no gateway) still validates its input and
// refuses callers without a valid token, and parts calling as themselves where its methods do
// not name them (vnm.api.callers).
import { generateKeyPairSync } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { AUTH_SERVICE, createUpstream, loadGrpc, mirrorClearing } from "@vnm/kit";
import { DEPS, type DirectService, directService } from "@vnm/kit/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let svc: DirectService;
const call = (rpc: string, req: unknown, bearer?: string | null) => svc.call("vnm.bridge.v1.BridgeService", rpc, req, bearer);
const token: DirectService["token"] = (who, key) => svc.token(who, key);

beforeAll(async () => {
  // Parts with credentials at its identity service: tracing and tunnel, which read bridges, qos,
  // which does not, and routing, which sets their VXLAN ports.
  svc = await directService("bridge", {}, ["tracing", "tunnel", "qos", "routing"]);
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a bad field with INVALID_ARGUMENT and its violations", async () => {
  const { err } = await call("CreateBridge", { bridge: { name: "x".repeat(256), inboundFilterId: "nope" } });
  expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  const violations = svc.violations({ err, res: undefined });
  expect(violations.map((v: { property: string }) => v.property).sort()).toEqual(["inboundFilterId", "name"]);
});

it("creates a bridge; an id that is not a UUID is NOT_FOUND", async () => {
  const { err, res } = await call("CreateBridge", { bridge: { name: "direct" } });
  expect(err).toBeNull();
  expect((res as { name: string }).name).toBe("direct");
  expect((await call("GetBridge", { id: "nope" })).err?.code).toBe(grpc.status.NOT_FOUND);
});

it("refuses a call without identity, with a forged or expired token", async () => {
  for (const bearer of [null, "v1.e30.AAAA", token({}, generateKeyPairSync("ed25519").privateKey), token({ exp: 1 })]) {
    const { err } = await call("ListBridges", {}, bearer);
    expect(err?.code).toBe(grpc.status.UNAUTHENTICATED);
  }
});

it("applies tenancy to a caller reached directly: other tenants' bridges are hidden", async () => {
  const a = (await call("CreateBridge", { bridge: { name: "of-a", tenantId: "A" } })).res as { id: string };
  const asB = token({ role: "tenant_admin", tenantId: "B" });
  expect((await call("GetBridge", { id: a.id }, asB)).err?.code).toBe(grpc.status.NOT_FOUND);
  expect((await call("DeleteBridge", { id: a.id }, asB)).err?.code).toBe(grpc.status.NOT_FOUND);
  const list = (await call("ListBridges", {}, asB)).res as { items?: unknown[] };
  expect(list.items ?? []).toEqual([]);
  const asUserA = token({ role: "tenant_user", tenantId: "A" });
  expect((await call("GetBridge", { id: a.id }, asUserA)).err).toBeNull();
  expect((await call("DeleteBridge", { id: a.id }, asUserA)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});

/** A part's own token, for its credential, from the identity service the bridge service trusts. */
async function partToken(part: string): Promise<string> {
  const up = createUpstream(loadGrpc(), [{ name: AUTH_SERVICE, domain: "identity" }], () => svc.identity.address);
  try {
    const credential = svc.identity.envFor(part)["VNM_SERVICE_CREDENTIAL"];
    return String((await up.call(AUTH_SERVICE, "IssueServiceToken", { name: part, credential }, 5_000)).response["token"]);
  } finally {
    up.close();
  }
}

it("answers a part calling as itself only where the method names it: tracing and tunnel read a bridge, nothing else (tunnel sets no VXLAN ports: routing does); qos nothing", async () => {
  const made = (await call("CreateBridge", { bridge: { name: "called" } })).res as { id: string };
  const tracing = await partToken("tracing");
  const tunnel = await partToken("tunnel");
  const qos = await partToken("qos");
  expect((await call("GetBridge", { id: made.id }, tracing)).res).toMatchObject({ id: made.id, name: "called" });
  expect((await call("GetBridge", { id: made.id }, tunnel)).res).toMatchObject({ id: made.id, name: "called" });
  const refused: [string, unknown, string][] = [
    ["GetBridge", { id: made.id }, qos],
    ["ListBridges", {}, tunnel],
    ["ListBridges", {}, tracing],
    ["DeleteBridge", { id: made.id }, tracing],
    ["SetBridgeVxlanPorts", { id: made.id, portIds: [made.id] }, tunnel],
  ];
  for (const [rpc, request, bearer] of refused) {
    const { err } = await call(rpc, request, bearer);
    expect(err?.code, rpc).toBe(grpc.status.PERMISSION_DENIED);
    expect(err?.details).toMatch(new RegExp(`The (tracing|tunnel|qos) part may not call vnm.bridge.v1.BridgeService/${rpc}`));
  }
  // A user's token is not concerned, and the refused deletion and change did not happen.
  const after = (await call("GetBridge", { id: made.id })).res as { id: string; vxlanPortIds?: string[] };
  expect(after.id).toBe(made.id);
  expect(after.vxlanPortIds ?? []).toEqual([]);
});

describe("DHCP and MAC table fields against dhcp.proto's and mac_table.proto's rules, checked here without the gateway's help", () => {
  const dhcp = (rpc: string, req: unknown) => svc.call("vnm.bridge.v1.DhcpService", rpc, req);
  let bridgeId = "";
  beforeAll(async () => {
    bridgeId = ((await call("CreateBridge", { bridge: { name: "dhcp" } })).res as { id: string }).id;
  });

  it("a subnet: IPv4 addresses, lengths and MTU in range, at most 16 DNS servers, each option-121 route checked", async () => {
    const r = await dhcp("CreateDhcpSubnet", {
      bridgeId,
      subnet: {
        subnetPrefix: "321.4.5.6",
        subnetLength: 33,
        defaultGateway: "nonsense",
        dnsServerAddrs: ["8.8.8.8", "x"],
        interfaceMTU: 65537,
        opt121Routes: [{ destinationPrefix: "1.0.0.0", destinationLength: 40, gatewayAddr: "1.1.1.1" }],
      },
    });
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual([
      { property: "subnetPrefix", message: "must be a valid IPv4 address" },
      { property: "subnetLength", message: "must be greater than or equal to 0 and less than or equal to 32" },
      { property: "defaultGateway", message: "must be a valid IPv4 address" },
      { property: "dnsServerAddrs", message: "must be a valid IPv4 address" },
      { property: "interfaceMTU", message: "must be greater than or equal to 0 and less than or equal to 65536" },
      { property: "opt121Routes", message: "must be greater than or equal to 0 and less than or equal to 32" },
    ]);
    const many = await dhcp("CreateDhcpSubnet", { bridgeId, subnet: { subnetPrefix: "10.0.0.0", subnetLength: 24, dnsServerAddrs: Array(17).fill("8.8.8.8") } });
    expect(svc.violations(many)).toEqual([{ property: "dnsServerAddrs", message: "must contain no more than 16 item(s)" }]);
    const partial = await dhcp("CreateDhcpSubnet", { bridgeId, subnet: { subnetPrefix: "10.0.0.0", opt121Routes: [{ destinationPrefix: "1.0.0.0" }] } });
    expect(svc.violations(partial)).toEqual([
      { property: "subnetLength", message: "value is required" },
      { property: "opt121Routes", message: "value is required" },
    ]);
  });

  it("a host: a MAC kept in lower case, an IPv4 address inside its subnet, text name and options", async () => {
    expect((await dhcp("CreateDhcpSubnet", { bridgeId, subnet: { subnetPrefix: "10.7.0.0", subnetLength: 24 } })).err).toBeNull();
    const at = { bridgeId, subnetAddr: "10.7.0.0_24" };
    const bad = await dhcp("CreateDhcpHost", { ...at, host: { macAddr: "2:0:0:0:0:1", ipAddr: "10.7.0.256", name: "x".repeat(256), extraDhcpOpts: [{ optName: "42", optValue: "a\u0000b" }] } });
    expect(svc.violations(bad)).toEqual([
      { property: "macAddr", message: "must be six groups of two hex digits separated by ':', e.g. 02:00:00:00:00:01" },
      { property: "ipAddr", message: "must be a valid IPv4 address" },
      { property: "name", message: "must be at most 255 characters" },
      { property: "extraDhcpOpts", message: "must be valid Unicode text without NUL characters" },
    ]);
    const outside = await dhcp("CreateDhcpHost", { ...at, host: { macAddr: "02:00:00:00:00:01", ipAddr: "10.8.0.1", name: "h" } });
    expect(svc.violations(outside)).toEqual([{ property: "ipAddr", message: "must lie inside the subnet 10.7.0.0/24" }]);
    const ok = await dhcp("CreateDhcpHost", { ...at, host: { macAddr: "02:AA:00:00:00:01", ipAddr: "10.7.0.1", name: "h" } });
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ macAddr: "02:aa:00:00:00:01" });
  });

  it("a DHCPv6 subnet: an IPv6 address without a zone, kept in RFC 5952 form, its length in [0, 128]", async () => {
    const zoned = await dhcp("CreateDhcpV6Subnet", { bridgeId, subnet: { prefix: "fe80::1%eth0", prefixLength: 64 } });
    expect(zoned.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(zoned)).toEqual([{ property: "prefix", message: "does not match regex pattern `^[^%]*$`" }]);
    const bad = await dhcp("CreateDhcpV6Subnet", { bridgeId, subnet: { prefix: "10.0.0.0", prefixLength: 129 } });
    expect(svc.violations(bad)).toEqual([
      { property: "prefix", message: "must be a valid IPv6 address" },
      { property: "prefixLength", message: "must be greater than or equal to 0 and less than or equal to 128" },
    ]);
    const ok = await dhcp("CreateDhcpV6Subnet", { bridgeId, subnet: { prefix: "2001:0DB8:0000::", prefixLength: 48 } });
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ prefix: "2001:db8::", prefixLength: 48 });
  });

  it("a MAC table entry: a MAC and a port id, both kept in lower case", async () => {
    const mt = (req: unknown) => svc.call("vnm.bridge.v1.MacTableService", "CreateMacPort", req);
    const bad = await mt({ bridgeId, entry: { macAddr: "02:11:NONSENSE", portId: "not-a-uuid" } });
    expect(svc.violations(bad)).toEqual([
      { property: "macAddr", message: "must be six groups of two hex digits separated by ':', e.g. 02:00:00:00:00:01" },
      { property: "portId", message: "must be a valid UUID" },
    ]);
    expect(svc.violations(await mt({ bridgeId, entry: { portId: "6B6D7D4E-0000-4000-8000-00000000000A" } }))).toEqual([{ property: "macAddr", message: "value is required" }]);
    const ok = await mt({ bridgeId, entry: { macAddr: "02:AB:00:00:00:01", portId: "6B6D7D4E-0000-4000-8000-00000000000A" } });
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ macAddr: "02:ab:00:00:00:01", portId: "6b6d7d4e-0000-4000-8000-00000000000a", vlanId: 0 });
  });
});

describe("a VXLAN port leaving its bridge (SetBridgeVxlanPorts, as routing)", () => {
  type Entry = { macAddr: string; portId: string; vlanId?: number };
  type Arp = { ip: string; mac: string };
  const macTable = async (bridgeId: string) =>
    (((await svc.call("vnm.bridge.v1.MacTableService", "ListMacPorts", { bridgeId })).res as { items?: Entry[] }).items ?? []).map((e) => `${e.vlanId ?? 0} ${e.macAddr} ${e.portId}`).sort();
  const arpTable = async (bridgeId: string) =>
    (((await svc.call("vnm.bridge.v1.ArpTableService", "ListArpTable", { bridgeId })).res as { items?: Arp[] }).items ?? []).map((a) => `${a.ip} ${a.mac}`).sort();

  it("takes its MAC entries (every VLAN) and the ARP entries of the MACs its device taught; a MAC another VXLAN port has keeps its ARP entry; the bridge's other entries stay", async () => {
    const routing = await partToken("routing");
    const tunnel = await partToken("tunnel");
    const { id } = (await call("CreateBridge", { bridge: { name: "vxlan-left" } })).res as { id: string };
    const [px, py, own] = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"];
    expect((await call("SetBridgeVxlanPorts", { id, portIds: [px, py] }, routing)).err).toBeNull();
    const learned = [
      [px, [{ mac: "00:aa:00:00:00:01", ip: "10.0.0.1" }, { mac: "00:aa:00:00:00:02", ip: "10.0.0.2" }]],
      [py, [{ mac: "00:aa:00:00:00:02", ip: "10.0.0.2" }]],
    ] as const;
    for (const [portId, macs] of learned) expect((await call("SetLearnedMacs", { id, portId, macs }, tunnel)).err).toBeNull();
    const mac = (vlanId: number, macAddr: string, portId: string) => svc.call("vnm.bridge.v1.MacTableService", "CreateMacPort", { bridgeId: id, vlanId, entry: { macAddr, portId } });
    expect((await mac(5, "02:00:00:00:00:05", px)).err).toBeNull();
    expect((await mac(0, "02:00:00:00:00:0a", own)).err).toBeNull();
    expect((await svc.call("vnm.bridge.v1.ArpTableService", "CreateArpEntry", { bridgeId: id, entry: { ip: "10.9.9.9", mac: "02:00:00:00:00:0a" } })).err).toBeNull();
    expect(await arpTable(id)).toEqual(["10.0.0.1 00:aa:00:00:00:01", "10.0.0.2 00:aa:00:00:00:02", "10.9.9.9 02:00:00:00:00:0a"]);

    expect((await call("SetBridgeVxlanPorts", { id, portIds: [py] }, routing)).err).toBeNull();
    expect(await macTable(id)).toEqual([`0 00:aa:00:00:00:02 ${py}`, `0 02:00:00:00:00:0a ${own}`]);
    expect(await arpTable(id)).toEqual(["10.0.0.2 00:aa:00:00:00:02", "10.9.9.9 02:00:00:00:00:0a"]);
    // Unchanged ports: nothing more goes.
    expect((await call("SetBridgeVxlanPorts", { id, portIds: [py] }, routing)).err).toBeNull();
    expect(await macTable(id)).toHaveLength(2);
    // The last: its MAC and that MAC's ARP entry go too.
    expect((await call("SetBridgeVxlanPorts", { id, portIds: [] }, routing)).err).toBeNull();
    expect(await macTable(id)).toEqual([`0 02:00:00:00:00:0a ${own}`]);
    expect(await arpTable(id)).toEqual(["10.9.9.9 02:00:00:00:00:0a"]);
  });

  it("leaves the operator's ARP entries of a MAC its device taught: a new IP for the MAC, the MAC forgotten and the port leaving take only what the device taught", async () => {
    const routing = await partToken("routing");
    const tunnel = await partToken("tunnel");
    const { id } = (await call("CreateBridge", { bridge: { name: "vxlan-operator-arp" } })).res as { id: string };
    const px = "44444444-4444-4444-8444-444444444444";
    const [m1, m2] = ["00:bb:00:00:00:01", "00:bb:00:00:00:02"];
    expect((await call("SetBridgeVxlanPorts", { id, portIds: [px] }, routing)).err).toBeNull();
    const operator = (ip: string, mac: string) => svc.call("vnm.bridge.v1.ArpTableService", "CreateArpEntry", { bridgeId: id, entry: { ip, mac } });
    expect((await operator("10.7.7.7", m1)).err).toBeNull();
    expect((await operator("10.0.0.5", m2)).err).toBeNull(); // the very pair the device teaches next
    const learn = (macs: { mac: string; ip: string }[]) => call("SetLearnedMacs", { id, portId: px, macs }, tunnel);
    expect((await learn([{ mac: m1, ip: "10.0.0.1" }, { mac: m2, ip: "10.0.0.5" }])).err).toBeNull();
    expect(await arpTable(id)).toEqual([`10.0.0.1 ${m1}`, `10.0.0.5 ${m2}`, `10.7.7.7 ${m1}`]);
    // m1 moves to another IP and m2 is forgotten: the device's old pair goes, the operator's stay.
    expect((await learn([{ mac: m1, ip: "10.0.0.9" }])).err).toBeNull();
    expect(await arpTable(id)).toEqual([`10.0.0.5 ${m2}`, `10.0.0.9 ${m1}`, `10.7.7.7 ${m1}`]);
    expect((await call("SetBridgeVxlanPorts", { id, portIds: [] }, routing)).err).toBeNull();
    expect(await arpTable(id)).toEqual([`10.0.0.5 ${m2}`, `10.7.7.7 ${m1}`]);
  });

  it("takes over a pair its device taught when the operator writes it: created, then the operator's (a second write is a 409), kept when the device forgets the MAC", async () => {
    const routing = await partToken("routing");
    const tunnel = await partToken("tunnel");
    const { id } = (await call("CreateBridge", { bridge: { name: "vxlan-adopted-arp" } })).res as { id: string };
    const px = "55555555-5555-4555-8555-555555555555";
    const m = "00:cc:00:00:00:01";
    expect((await call("SetBridgeVxlanPorts", { id, portIds: [px] }, routing)).err).toBeNull();
    const learn = (macs: { mac: string; ip: string }[]) => call("SetLearnedMacs", { id, portId: px, macs }, tunnel);
    expect((await learn([{ mac: m, ip: "10.0.0.20" }])).err).toBeNull();
    expect(await arpTable(id)).toEqual([`10.0.0.20 ${m}`]);
    const operator = () => svc.call("vnm.bridge.v1.ArpTableService", "CreateArpEntry", { bridgeId: id, entry: { ip: "10.0.0.20", mac: m } });
    const taken = await operator();
    expect(taken.err).toBeNull();
    expect(taken.res).toMatchObject({ ip: "10.0.0.20", mac: m });
    const again = await operator();
    expect(again.err?.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(again.err?.details).toContain("already pairs 10.0.0.20 with");
    // The device forgets the MAC, then the port leaves: the pair is the operator's now.
    expect((await learn([])).err).toBeNull();
    expect((await call("SetBridgeVxlanPorts", { id, portIds: [] }, routing)).err).toBeNull();
    expect(await arpTable(id)).toEqual([`10.0.0.20 ${m}`]);
  });
});

it("finds the bridges naming a deleted mirror through the mirror lists' indexes, which hold only the lists that name one", async () => {
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    const table = `"${svc.schema}".bridges`;
    const mirror = "6d1f0b44-5b8c-4c53-9a43-2f4c8e1f7a10";
    await db.query(`INSERT INTO ${table} (id) SELECT gen_random_uuid() FROM generate_series(1, 5000)`);
    await db.query(`INSERT INTO ${table} (id, inbound_mirror_ids) SELECT gen_random_uuid(), ARRAY[$1::uuid] FROM generate_series(1, 3)`, [mirror]);
    await db.query(`INSERT INTO ${table} (id, outbound_mirror_ids) VALUES (gen_random_uuid(), ARRAY[$1::uuid])`, [mirror]);
    await db.query(`ANALYZE ${table}`);
    await db.query(`SET search_path = "${svc.schema}"`);
    // The statement the policy service's mirror deletion runs, planned as a prepared one is.
    await db.query("SET plan_cache_mode = force_generic_plan");
    await db.query(`PREPARE clearing(uuid) AS ${mirrorClearing("bridges")}`);
    const plan = JSON.stringify((await db.query(`EXPLAIN (FORMAT JSON) EXECUTE clearing('${mirror}')`)).rows);
    expect(plan).toContain("bridges_inbound_mirrors");
    expect(plan).toContain("bridges_outbound_mirrors");
    expect(plan).not.toContain("Seq Scan");
    // The indexes leave the 5,000 empty lists out.
    const defs = await db.query("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE 'bridges_%_mirrors' ORDER BY indexname", [svc.schema]);
    expect(defs.rows.map((r) => [r.indexname, /WHERE \((\w+) <> '\{\}'::uuid\[\]\)$/.exec(r.indexdef)?.[1]])).toEqual([
      ["bridges_inbound_mirrors", "inbound_mirror_ids"],
      ["bridges_outbound_mirrors", "outbound_mirror_ids"],
    ]);
    expect((await db.query(`EXECUTE clearing('${mirror}')`)).rowCount).toBe(4);
  } finally {
    await db.end();
  }
});
