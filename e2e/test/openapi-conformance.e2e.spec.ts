// The OpenAPI document against the server (issue 50, "OpenAPI tells the truth"): GET
// /openapi.json from a real stack, Stoplight Prism as a validating proxy in front of its gateway,
// and every operation of the document called through it. Every answer (status, documented
// headers, body) must match the document; a request the document calls invalid (a value past each
// of its rules, a required field left out, a wrong type) must be refused with a 4xx; a request the
// server accepts must be valid by the document; a value at each documented limit must be taken
// (the server enforces no rule the document omits); and every documented filter must be served.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OvsdbServer } from "../harness/ovsdb-server.ts";
import { PrismProxy, type ProxyAnswer, type ProxyRequest } from "../harness/prism.ts";
import { useStack, waitFor } from "../harness/harness.ts";

// No request limits: the suite sends a few thousand requests as one user.
const fx = useStack({ VNM_RATE_LIMIT: "0", VNM_SOURCE_RATE_LIMIT: "0" });

// biome-ignore lint/suspicious/noExplicitAny: the document's JSON is walked key by key
type Schema = Record<string, any>;
interface Op {
  id: string;
  method: string;
  template: string;
  op: Schema;
}

let doc: Schema;
let prism: PrismProxy;
let device: OvsdbServer;
let spare: OvsdbServer;
const ops: Op[] = [];
/** Operation id -> requests sent for it through the proxy. */
const sent = new Map<string, number>();
/** Every mismatch found, by the test that found it. */
const found: Record<string, string[]> = { answers: [], invalid: [], accepted: [], limits: [], filters: [] };
/** Known concrete URLs (items' uri and links), matched against the document's path templates, in the order first seen. */
const urls = new Set<string>();

const ROUTER = "0000000a-0000-4000-8000-000000000001";
const PORT_A = "0000000b-0000-4000-8000-0000000000a1";
const TENANT = "acme";
let n = 0;
const unique = (p: string) => `${p}-${++n}-${fx.stack.id}`;
const port = () => `0000000c-0000-4000-8000-${String(++n).padStart(12, "0")}`;

const auth = () => ({ "x-auth-token": fx.stack.adminToken });
const mediaOf = (op: Schema) => Object.keys(op["requestBody"]?.["content"] ?? {})[0] ?? "application/json";
const label = (o: Op) => `${o.method.toUpperCase()} ${o.template} (${o.id})`;

/** Sends one request of an operation through Prism; records every answer violation. */
async function call(o: Op, path: string, req: ProxyRequest = {}, why = "answers"): Promise<ProxyAnswer> {
  const headers: Record<string, string> = { ...auth(), ...req.headers };
  if (req.body !== undefined) headers["content-type"] ??= mediaOf(o.op);
  const r = await prism.send(o.method.toUpperCase(), path, { headers, body: req.body });
  sent.set(o.id, (sent.get(o.id) ?? 0) + 1);
  for (const v of r.response.filter((v) => !exactInteger(r, v))) found["answers"]!.push(`${label(o)} ${path} -> ${r.status}: ${v.location.join(".")} ${v.message}`);
  if (r.status >= 200 && r.status < 300) {
    for (const v of r.request) found["accepted"]!.push(`${label(o)} ${path} ${why}: ${r.status} to ${JSON.stringify(req.body)?.slice(0, 200)}; the document: ${v.location.join(".")} ${v.message}`);
  }
  if (r.status >= 500) found["answers"]!.push(`${label(o)} ${path} ${why} -> ${r.status}: ${r.text.slice(0, 300)}`);
  collect(r.json);
  return r;
}

/**
 * Prism reads a JSON number as a double, so an int64 beyond 2^53 that the API answers exactly (a
 * trace's limit, 2^63-1 by default) fails its int64 check: such a value is checked here instead,
 * as digits within the int64 range.
 */
function exactInteger(r: ProxyAnswer, v: { location: string[] }): boolean {
  let value: unknown = r.json;
  for (const k of v.location.slice(2)) value = (value as Record<string, unknown> | undefined)?.[k];
  // Prism answers the double it read (2^63-1 becomes 9223372036854776000): within int64 as a double.
  if (typeof value !== "string" || !/^-?\d{16,}$/.test(value) || !r.text.includes(`:${value}`)) return false;
  return Math.abs(Number(value)) <= 2 ** 63;
}

/** An item as the gateway answers it (not through Prism, which rounds integers beyond 2^53): for a PUT's body. */
async function current(path: string): Promise<Schema> {
  const r = await fetch(`${fx.gw}${path}`, { headers: auth() });
  return JSON.parse(await r.text(), (_k, v, c?: { source?: string }) => (typeof v === "number" && !Number.isSafeInteger(v) && c?.source ? c.source : v)) as Schema;
}

/** Every URL an answer names (items' `uri` and links), for the path templates' variables. */
function collect(value: unknown): void {
  if (typeof value === "string" && value.startsWith(fx.gw) && !value.includes("{")) urls.add(value.slice(fx.gw.length));
  else if (Array.isArray(value)) value.forEach(collect);
  else if (value && typeof value === "object") Object.values(value).forEach(collect);
}

const opById = (id: string) => {
  const o = ops.find((x) => x.id === id);
  if (!o) throw new Error(`the document has no operation ${id}`);
  return o;
};

/** Creates one item through the proxy; its answer must be 201. Its URL is known (compat items name none but in Location). */
async function create(id: string, path: string, body: unknown): Promise<Schema> {
  const r = await call(opById(id), path, { body });
  expect(r.status, `${id} ${path}: ${r.text.slice(0, 300)}`).toBe(201);
  collect(r.headers.get("location"));
  return r.json;
}

const deref = (s: Schema | undefined): Schema => {
  if (!s) return {};
  if (typeof s["$ref"] !== "string") return s;
  const name = String(s["$ref"]).replace("#/components/schemas/", "");
  return doc["components"]["schemas"][name] as Schema;
};

/** A value's own schema: without null, without the strings the API also takes, one type. */
function core(s0: Schema): Schema {
  const s = deref(s0);
  if (Array.isArray(s["anyOf"])) {
    const members = (s["anyOf"] as Schema[]).map(deref).filter((m) => m["type"] !== "null");
    const own = members.filter((m) => !(m["type"] === "string" && (m["pattern"] === "^-?[0-9]+$" || (m["enum"] as unknown[] | undefined)?.[0] === "true")));
    // An address of either family: anyOf [ipv4, ipv6] beside the string type.
    if (s["type"] || own.every((m) => !m["type"] && m["format"])) return { ...s, anyOf: undefined, type: typeOf(s) ?? "string", format: own.map((m) => m["format"]).join("|") };
    return core(own[0] ?? {});
  }
  return { ...s, type: typeOf(s), enum: Array.isArray(s["enum"]) ? (s["enum"] as unknown[]).filter((v) => v !== null) : undefined };
}
const typeOf = (s: Schema) => (Array.isArray(s["type"]) ? (s["type"] as string[]).find((t) => t !== "null") : (s["type"] as string | undefined));

/** Whether a string satisfies a schema pattern (JSON Schema's: unanchored, Unicode). */
const matches = (pattern: string, value: string) => new RegExp(pattern, "u").test(value);

/** Values past each rule of a value's schema (each one the document calls invalid), with what each breaks. */
function pastValues(s0: Schema, valid: unknown): [string, unknown][] {
  const s = core(s0);
  const out: [string, unknown][] = [];
  switch (s["type"]) {
    case "string": {
      if (typeof s["maxLength"] === "number") out.push([`longer than ${s["maxLength"]}`, "a".repeat(s["maxLength"] + 1)]);
      if (typeof s["minLength"] === "number" && s["minLength"] > 0) out.push([`shorter than ${s["minLength"]}`, "a".repeat(s["minLength"] - 1)]);
      if (s["enum"]) out.push(["not one of its values", "NOT-ONE-OF-THEM"]);
      if (s["format"] && /uuid|ipv4|ipv6|uri/.test(String(s["format"]))) out.push([`not ${s["format"]}`, "no such thing"]);
      if (s["pattern"] && !matches(s["pattern"], "%%")) out.push([`not matching ${s["pattern"]}`, "%%"]);
      out.push(["not a string", { a: 1 }]);
      break;
    }
    case "integer":
    case "number": {
      if (typeof s["minimum"] === "number") out.push([`below ${s["minimum"]}`, s["minimum"] - 1]);
      if (typeof s["maximum"] === "number") out.push([`above ${s["maximum"]}`, s["maximum"] + 1]);
      if (typeof s["exclusiveMinimum"] === "number") out.push([`not above ${s["exclusiveMinimum"]}`, s["exclusiveMinimum"]]);
      if (typeof s["exclusiveMaximum"] === "number") out.push([`not below ${s["exclusiveMaximum"]}`, s["exclusiveMaximum"]]);
      out.push(["not a number", "twelve"]);
      if (s["type"] === "integer") out.push(["not whole", 1.5]);
      break;
    }
    case "boolean":
      out.push(["not a boolean", "maybe"]);
      break;
    case "array": {
      const items = s["items"] as Schema;
      const one = Array.isArray(valid) && valid.length > 0 ? valid[0] : sample(items);
      if (typeof s["maxItems"] === "number" && one !== undefined) out.push([`more than ${s["maxItems"]} items`, Array.from({ length: s["maxItems"] + 1 }, () => one)]);
      for (const [what, v] of pastValues(items, one)) out.push([`an item ${what}`, [v]]);
      out.push(["not a list", "x"]);
      break;
    }
    case "object": {
      out.push(["not an object", "x"]);
      if (valid && typeof valid === "object" && s["properties"]) {
        for (const [k, p] of Object.entries(s["properties"] as Record<string, Schema>)) {
          if (deref(p)["readOnly"]) continue;
          for (const [what, v] of pastValues(p, (valid as Schema)[k])) out.push([`.${k} ${what}`, { ...(valid as Schema), [k]: v }]);
        }
      }
      break;
    }
  }
  return out;
}

/** Values at each documented limit (each one the document calls valid). */
function limitValues(s0: Schema): [string, unknown][] {
  const s = core(s0);
  const out: [string, unknown][] = [];
  if (s["type"] === "string" && !s["format"] && !s["enum"]) {
    for (const len of [s["maxLength"], s["minLength"]]) {
      if (typeof len !== "number") continue;
      // Varied letters and digits: a value no strength or repetition rule of a field's meaning refuses.
      const v = Array.from({ length: len }, (_, i) => "k3xq9wz7vjm2pf5rhd8tbn4gcy6"[(i * 7 + len) % 27]).join("");
      if (!s["pattern"] || matches(s["pattern"], v)) out.push([`${len} characters`, v]);
    }
  }
  if (s["type"] === "string" && Array.isArray(s["enum"])) for (const v of s["enum"]) out.push([`the value ${v}`, v]);
  if (s["type"] === "integer" || s["type"] === "number") {
    for (const k of ["minimum", "maximum"]) if (typeof s[k] === "number") out.push([`its ${k} ${s[k]}`, s[k]]);
  }
  if (s["type"] === "array" && typeof s["maxItems"] === "number") {
    const item = core(s["items"] as Schema);
    if (item["format"] === "ipv4") out.push([`${s["maxItems"]} items`, Array.from({ length: s["maxItems"] }, (_, i) => `10.9.${i >> 8}.${i & 255}`)]);
  }
  return out;
}

/** A plausible valid value of a schema (a filter's, an item's), when no item gives one. */
function sample(s0: Schema | undefined): unknown {
  const s = core(s0 ?? {});
  if (s["enum"]) return (s["enum"] as unknown[])[0];
  switch (s["type"]) {
    case "boolean":
      return true;
    case "integer":
    case "number":
      return typeof s["minimum"] === "number" ? s["minimum"] : 1;
    case "string": {
      const f = String(s["format"] ?? "");
      if (f.includes("uuid")) return randomUUID();
      if (f.includes("ipv4")) return "10.0.0.1";
      if (f.includes("ipv6")) return "2001:db8::1";
      if (s["pattern"] && matches(s["pattern"], "02:00:00:00:00:01")) return "02:00:00:00:00:01";
      if (s["pattern"] && matches(s["pattern"], "10.0.0.0/8")) return "10.0.0.0/8";
      return "a";
    }
    default:
      return undefined;
  }
}

/** A concrete path for a template: a known URL it matches, else the variables from `extra`. */
function pathFor(template: string): string | undefined {
  const re = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/?]+")}$`);
  for (const u of urls) if (re.test(u)) return u;
  return undefined;
}

/** The body schema of a write (its properties a client may send) and the required ones. */
function bodySchema(o: Op): { props: [string, Schema][]; required: string[] } {
  const content = o.op["requestBody"]?.["content"] as Record<string, Schema> | undefined;
  const s = deref(Object.values(content ?? {})[0]?.["schema"]);
  const props = Object.entries((s["properties"] ?? {}) as Record<string, Schema>).filter(([, p]) => !deref(p)["readOnly"]);
  return { props, required: (s["required"] as string[] | undefined) ?? [] };
}

/** An item's representation as a body: without what the document marks read-only. */
function writable(o: Op, item: Schema): Schema {
  const names = new Set(bodySchema(o).props.map(([k]) => k));
  return Object.fromEntries(Object.entries(item).filter(([k, v]) => names.has(k) && v !== null));
}

/** A valid body for each write, by operation id: a fresh item each call (unique names, fresh ports). */
const bodies: Record<string, () => Schema> = {};

async function buildWorld(): Promise<void> {
  const bridge = await create("createBridge", "/bridges", { name: "conformance", tenantId: TENANT });
  const b = `/bridges/${bridge["id"]}`;
  await buildTopology(b);
  let octet = 10;
  bodies["createBridge"] = () => ({ name: unique("b"), tenantId: TENANT });
  bodies["createDhcpSubnet"] = () => ({ subnetPrefix: `10.${++octet}.0.0`, subnetLength: 24, defaultGateway: `10.${octet}.0.1`, dnsServerAddrs: ["8.8.8.8"], interfaceMTU: 1500 });
  await create("createDhcpSubnet", `${b}/dhcp`, { subnetPrefix: "10.0.0.0", subnetLength: 24, defaultGateway: "10.0.0.1", dnsServerAddrs: ["8.8.8.8"], opt121Routes: [{ destinationPrefix: "10.20.0.0", destinationLength: 16, gatewayAddr: "10.0.0.1" }] });
  let host = 10;
  bodies["createDhcpHost"] = () => ({ macAddr: `02:00:00:00:01:${(++host).toString(16).padStart(2, "0")}`, ipAddr: `10.0.0.${host}`, name: unique("h") });
  await create("createDhcpHost", `${b}/dhcp/10.0.0.0_24/hosts`, { macAddr: "02:00:00:00:00:01", ipAddr: "10.0.0.5", name: "h1", extraDhcpOpts: [{ optName: "a", optValue: "b" }] });
  let v6 = 0;
  bodies["createDhcpV6Subnet"] = () => ({ prefix: `2001:db8:${(++v6).toString(16)}::`, prefixLength: 64 });
  await create("createDhcpV6Subnet", `${b}/dhcpV6`, { prefix: "2001:db8::", prefixLength: 64 });
  let mac = 0;
  const macBody = () => ({ macAddr: `02:ab:00:00:00:${(++mac).toString(16).padStart(2, "0")}`, portId: PORT_A });
  bodies["createMacPort2"] = macBody;
  bodies["createMacPort"] = macBody;
  await create("createMacPort2", `${b}/mac_table`, { ...macBody(), vlanId: 9 });
  await create("createMacPort", `${b}/vlans/5/mac_table`, macBody());
  let arp = 0;
  bodies["createArpEntry"] = () => ({ ip: `10.8.0.${++arp}`, mac: `02:00:0a:08:00:${arp.toString(16).padStart(2, "0")}` });
  await create("createArpEntry", `${b}/arp_table`, bodies["createArpEntry"]());
  const zone = await create("createTunnelZone", "/tunnel_zones", { name: unique("z"), type: "vtep" });
  bodies["createTunnelZone"] = () => ({ name: unique("z"), type: "gre" });
  device = await OvsdbServer.create();
  device.ctl("add-ps", "sw-one");
  device.ctl("set", "Physical_Switch", "sw-one", "management_ips=127.0.0.1", 'tunnel_ips=["10.9.0.1"]', "description=first");
  device.ctl("add-port", "sw-one", "eth0");
  const vtep = await create("createVtep", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: zone["id"] });
  // A binding of the device's port to the world's bridge, once the session has read the port.
  const vtepPorts = `/vteps/${vtep["id"]}/ports`;
  await waitFor("the VTEP's port", async () => JSON.stringify((await call(opById("listVtepPorts"), vtepPorts)).json).includes("eth0"), 20_000);
  let vlan = 100;
  bodies["createVtepBinding"] = () => ({ portName: "eth0", vlanId: ++vlan, networkId: bridge["id"] });
  await create("createVtepBinding", `/vteps/${vtep["id"]}/bindings`, bodies["createVtepBinding"]());
  // Another device for the VTEP the suite creates later; a second one at it is a 409.
  spare = await OvsdbServer.create();
  bodies["createVtep"] = () => ({ managementIp: "127.0.0.1", managementPort: spare.port, tunnelZoneId: zone["id"] });
  await buildHosts(b);
  await buildLb();
  bodies["createUser"] = () => ({ name: unique("u"), password: "conformance-password-1", tenantId: TENANT, roles: ["tenant_user"] });
  await create("createUser", "/users", { name: `logout-${fx.stack.id}`, password: "conformance-password-1", tenantId: TENANT, roles: ["tenant_user"] });
  bodies["createQosPolicy"] = () => ({ name: unique("q"), description: "d", tenantId: TENANT });
  const qos = await create("createQosPolicy", "/qos_policies", bodies["createQosPolicy"]());
  bodies["createQosBwLimitRule"] = () => ({ maxKbps: 1000, maxBurstKb: 100 });
  bodies["createQosDscpRule"] = () => ({ dscpMark: 46 });
  await create("createQosBwLimitRule", `/qos_policies/${qos["id"]}/qos_bw_limit_rules`, bodies["createQosBwLimitRule"]());
  await create("createQosDscpRule", `/qos_policies/${qos["id"]}/qos_dscp_rules`, bodies["createQosDscpRule"]());
  bodies["createTraceRequest"] = () => ({ name: unique("t"), deviceType: "BRIDGE", deviceId: bridge["id"], condition: { dlType: 2048 } });
  await create("createTraceRequest", "/traces", bodies["createTraceRequest"]());
  await buildPolicy();
  let dst = 0;
  bodies["createRoute"] = () => ({ type: "Normal", dstNetworkAddr: `10.${++dst}.0.0`, dstNetworkLength: 16, srcNetworkAddr: "0.0.0.0", srcNetworkLength: 0, nextHopPort: PORT_A, nextHopGateway: "10.0.0.1", weight: 100 });
  await create("createRoute", `/routers/${ROUTER}/routes`, bodies["createRoute"]());
  bodies["createL2Insertion"] = () => ({ mac: "02:ab:00:00:00:01", portId: port(), srvPortId: port(), position: 1 });
  await create("createL2Insertion", "/l2insertions", bodies["createL2Insertion"]());
  bodies["createIpAddrGroup"] = () => ({ name: unique("g") });
  const addrGroup = await create("createIpAddrGroup", "/ip_addr_groups", bodies["createIpAddrGroup"]());
  let groupAddr = 0;
  bodies["createIpAddrGroupAddr"] = () => ({ version: 4, addr: `10.7.0.${++groupAddr}` });
  await create("createIpAddrGroupAddr", `/ip_addr_groups/${addrGroup["id"]}/ip_addrs`, bodies["createIpAddrGroupAddr"]());
  bodies["createPortGroup"] = () => ({ name: unique("pg"), tenantId: TENANT, stateful: true });
  const portGroup = await create("createPortGroup", "/port_groups", bodies["createPortGroup"]());
  // Each membership names a port not yet in the group: ports of the bridge, made up front.
  const memberPorts: string[] = [];
  for (let i = 0; i < 20; i++) {
    const made = await call(opById("createBridgePort"), `${b}/ports`, { body: {} });
    expect(made.status, made.text).toBe(201);
    memberPorts.push(made.json["id"]);
  }
  const firstMember = memberPorts.shift()!;
  bodies["createPortGroupPort"] = () => ({ portId: memberPorts.shift() ?? firstMember });
  await create("createPortGroupPort", `/port_groups/${portGroup["id"]}/ports`, { portId: firstMember });
  urls.add(`/ports/${firstMember}/port_groups`);
  await buildCompat();
  // A tenant's quotas: an override, so that GET /quotas lists it and its DELETE restores something.
  const quota = await call(opById("updateQuota"), `/quotas/${TENANT}`, { body: { limits: { bridges: 100000 } } });
  expect(quota.status, quota.text).toBe(200);
  urls.add(`/quotas/${TENANT}`);
  urls.add(`${b}/vlans/5/mac_table`);
  urls.add(`/routers/${ROUTER}/routes`);
}

/**
 * Routers and ports: the world's router and its port (the routes' next hop) come first, so the
 * suite links that unlinked port to a fresh peer each time; two linked ports for the unlink.
 */
async function buildTopology(bridgePath: string): Promise<void> {
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${fx.gw}${path}`, { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(r.status, `${path}: ${r.status}`).toBe(201);
    return (await r.json()) as Schema;
  };
  await create("createRouter", "/routers", { id: ROUTER, name: "conformance", tenantId: TENANT });
  bodies["createRouter"] = () => ({ name: unique("r"), tenantId: TENANT });
  let subnet = 0;
  bodies["createRouterPort"] = () => ({ portAddress: `10.30.${++subnet}.1`, networkAddress: `10.30.${subnet}.0`, networkLength: 24 });
  await create("createRouterPort", `/routers/${ROUTER}/ports`, { id: PORT_A, portAddress: "10.30.0.1", networkAddress: "10.30.0.0", networkLength: 24 });
  bodies["createBridgePort"] = () => ({ vlanId: 7 });
  await create("createBridgePort", `${bridgePath}/ports`, { vlanId: 5 });
  const peers: string[] = [];
  for (let i = 0; i < 20; i++) peers.push((await post(`/routers/${(await post("/routers", { tenantId: TENANT }))["id"]}/ports`, {}))["id"]);
  bodies["linkPort"] = () => ({ peerId: peers.shift() ?? randomUUID() });
  // A linked pair, for the unlink (DELETE /ports/{id}/link).
  const [one, two] = [await post(`/routers/${(await post("/routers", { tenantId: TENANT }))["id"]}/ports`, {}), await post(`/routers/${(await post("/routers", { tenantId: TENANT }))["id"]}/ports`, {})];
  const linked = await call(opById("linkPort"), `/ports/${one!["id"]}/link`, { body: { peerId: two!["id"] } });
  expect(linked.status, linked.text).toBe(201);
  urls.add(`/routers/${ROUTER}/peer_ports`);
  urls.add(`${bridgePath}/peer_ports`);
}

/** Hosts, a zone's members and bindings: each membership and binding needs a host or a port of its own, made up front. */
async function buildHosts(bridgePath: string): Promise<void> {
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${fx.gw}${path}`, { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(r.status, `${path}: ${r.status}`).toBe(201);
    return (await r.json()) as Schema;
  };
  bodies["createHost"] = () => ({ name: unique("host"), addresses: ["10.6.0.1", "2001:db8::6"] });
  const host = await create("createHost", "/hosts", bodies["createHost"]());
  const zone = await post("/tunnel_zones", { name: unique("hz"), type: "gre" });
  const joiners: string[] = [];
  for (let i = 0; i < 15; i++) joiners.push((await post("/hosts", { name: unique("joiner") }))["id"]);
  bodies["createTunnelZoneHost"] = () => ({ hostId: joiners.shift() ?? host["id"], ipAddress: "10.6.0.2" });
  await create("createTunnelZoneHost", `/tunnel_zones/${zone["id"]}/hosts`, { hostId: host["id"], ipAddress: "10.6.0.1" });
  const ports: string[] = [];
  for (let i = 0; i < 15; i++) ports.push((await post(`${bridgePath}/ports`, {}))["id"]);
  let iface = 0;
  bodies["createHostPort"] = () => ({ portId: ports.shift() ?? randomUUID(), interfaceName: `tap${++iface}` });
  await create("createHostPort", `/hosts/${host["id"]}/ports`, bodies["createHostPort"]());
}

/**
 * A chain, a rule in it and a mirror to the world's router port. The rule's body carries what
 * every type requires (a jump's chain, a NAT rule's flowAction and floating-IP target, a trace's
 * request), so that each value of its `type` is one the server takes; an accept rule ignores them.
 */
async function buildPolicy(): Promise<void> {
  bodies["createChain"] = () => ({ name: unique("c"), tenantId: TENANT });
  const chain = await create("createChain", "/chains", bodies["createChain"]());
  bodies["createRule"] = () => ({
    type: "accept",
    nwSrcAddress: "10.0.0.0",
    nwSrcLength: 8,
    dlSrc: "02:00:00:00:00:01",
    dlSrcMask: "ffff.ffff.0000",
    dlDstMask: "ffff.0000.0000",
    jumpChainId: chain["id"],
    flowAction: "accept",
    natTargets: [{ addressFrom: "10.0.0.1", addressTo: "10.0.0.1" }],
    requestId: randomUUID(),
  });
  await create("createRule", `/chains/${chain["id"]}/rules`, bodies["createRule"]());
  bodies["createMirror"] = () => ({ toPortId: PORT_A, conditions: [{ nwProto: 6 }] });
  await create("createMirror", "/mirrors", bodies["createMirror"]());
}

async function buildLb(): Promise<void> {
  const lb = await create("createLoadBalancer", "/load_balancers", {});
  bodies["createLoadBalancer"] = () => ({ adminStateUp: true });
  const hm = await create("createHealthMonitor", "/health_monitors", { type: "TCP", delay: 5, timeout: 5, maxRetries: 3 });
  bodies["createHealthMonitor"] = () => ({ type: "TCP" });
  bodies["createPool"] = () => ({ loadBalancerId: lb["id"], lbMethod: "ROUND_ROBIN" });
  await create("createPool", "/pools", { ...bodies["createPool"](), healthMonitorId: hm["id"] });
  bodies["createLoadBalancerPool"] = () => ({ loadBalancerId: lb["id"], lbMethod: "ROUND_ROBIN" });
  const pool = await create("createLoadBalancerPool", `/load_balancers/${lb["id"]}/pools`, bodies["createLoadBalancerPool"]());
  urls.add(`/healh_monitors/${hm["id"]}/pools`);
  // Members and VIPs (several may share a pool, an address and a port).
  bodies["createPoolMember"] = () => ({ poolId: pool["id"], address: "10.40.0.1", protocolPort: 80, weight: 2 });
  bodies["createPoolPoolMember"] = () => ({ address: "10.40.0.2", protocolPort: 81 });
  await create("createPoolMember", "/pool_members", bodies["createPoolMember"]());
  await create("createPoolPoolMember", `/pools/${pool["id"]}/pool_members`, bodies["createPoolPoolMember"]());
  bodies["createVip"] = () => ({ poolId: pool["id"], address: "10.41.0.1", protocolPort: 443, sessionPersistence: "SOURCE_IP" });
  bodies["createPoolVip"] = () => ({ address: "10.41.0.2" });
  await create("createVip", "/vips", bodies["createVip"]());
  await create("createPoolVip", `/pools/${pool["id"]}/vips`, bodies["createPoolVip"]());
  urls.add(`/load_balancers/${lb["id"]}/vips`);
}

async function buildCompat(): Promise<void> {
  const pool = await create("createCompatPool", "/compat/lb/pools", { tenant_id: TENANT, name: "p", lb_method: "ROUND_ROBIN", protocol: "TCP" });
  bodies["createCompatPool"] = () => ({ tenant_id: TENANT, name: unique("p") });
  let ip = 0;
  bodies["createCompatMember"] = () => ({ tenant_id: TENANT, pool_id: pool["id"], address: `10.1.0.${++ip}`, protocol_port: 80 });
  await create("createCompatMember", "/compat/lb/members", bodies["createCompatMember"]());
  // Each further VIP needs a pool of its own (one VIP per pool); then a taken pool's 409.
  const vipPools: string[] = [];
  for (let i = 0; i < 40; i++) vipPools.push((await call(opById("createCompatPool"), "/compat/lb/pools", { body: { tenant_id: TENANT, name: unique("vp") } })).json["id"]);
  bodies["createCompatVip"] = () => ({ tenant_id: TENANT, pool_id: vipPools.shift() ?? pool["id"], protocol: "TCP", session_persistence: { type: "APP_COOKIE", cookie_name: "jar" } });
  await create("createCompatVip", "/compat/lb/vips", bodies["createCompatVip"]());
  bodies["createCompatHealthMonitor"] = () => ({ tenant_id: TENANT, type: "HTTP", delay: 5, timeout: 5, pools: [{ pool_id: pool["id"] }] });
  const hm = await create("createCompatHealthMonitor", "/compat/lb/health_monitors", bodies["createCompatHealthMonitor"]());
  // Each association names a monitor not yet on the pool; then a 409.
  const monitors: string[] = [];
  for (let i = 0; i < 10; i++) monitors.push((await create("createCompatHealthMonitor", "/compat/lb/health_monitors", { tenant_id: TENANT, type: "TCP" }))["id"]);
  bodies["associateHealthMonitor"] = () => ({ id: monitors.shift() ?? hm["id"] });
  await create("associateHealthMonitor", `/compat/lb/pools/${pool["id"]}/health_monitors`, bodies["associateHealthMonitor"]());
  urls.add(`/compat/lb/pools/${pool["id"]}/health_monitors`);
  urls.add(`/compat/lb/pools/${pool["id"]}/health_monitors/${hm["id"]}`);
  bodies["createCompatSecurityGroupRule"] = () => ({ tenant_id: TENANT, direction: "ingress", security_group_id: randomUUID(), ethertype: "IPv4", protocol: "tcp", port_range_min: 80, port_range_max: 81 });
  await create("createCompatSecurityGroupRule", "/compat/security_group_rules", bodies["createCompatSecurityGroupRule"]());
}

beforeAll(async () => {
  doc = (await (await fetch(`${fx.gw}/openapi.json`)).json()) as Schema;
  for (const [template, methods] of Object.entries(doc["paths"] as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(methods)) ops.push({ id: String(op["operationId"]), method, template, op });
  }
  prism = await PrismProxy.start(JSON.stringify(doc), fx.gw);
  await buildWorld();
}, 120_000);

afterAll(async () => {
  await prism?.stop();
  await device?.destroy();
  await spare?.destroy();
});

/** A GET answering a list (a JSON array of items). */
const isCollection = (o: Op) => o.method === "get" && Object.values((o.op["responses"]["200"]?.["content"] ?? {}) as Record<string, Schema>).some((c) => c["schema"]?.["type"] === "array");
const needsToken = (o: Op) => !(Array.isArray(o.op["security"]) && o.op["security"].length === 0) && o.id !== "login";
const GATEWAY_OWN = new Set(["login", "logout", "logoutEverywhere", "events", "healthz", "readyz", "metrics", "openapi"]);

/** A concrete path for an operation, or a failure naming the template. */
function concrete(o: Op): string {
  const p = o.template.includes("{") ? pathFor(o.template) : o.template;
  if (!p) throw new Error(`no item of the world is at ${o.template}: add one`);
  return p;
}

describe("every operation through the validating proxy", () => {
  it("answers as documented: its success, and each documented error status a client can provoke", async () => {
    const catalog = ops.filter((o) => !GATEWAY_OWN.has(o.id) && o.method !== "delete");
    for (const o of catalog) await answers(o);
    await gatewayOwn();
    expect(found["answers"]).toEqual([]);
  }, 60_000);

  it("refuses with a 4xx each request the document calls invalid: a value past each rule, a required field left out, a wrong type, in a body, a path or a query", async () => {
    for (const o of ops.filter((x) => x.op["requestBody"])) await invalidBodies(o);
    for (const o of ops.filter((x) => !GATEWAY_OWN.has(x.id) && x.method !== "delete")) await invalidParameters(o);
    expect(found["invalid"]).toEqual([]);
  }, 60_000);

  it("takes a value at each documented limit (the server enforces no rule the document omits)", async () => {
    for (const o of ops.filter((x) => x.method === "post" && x.op["requestBody"])) await atLimits(o);
    expect(found["limits"]).toEqual([]);
  }, 60_000);

  it("serves every documented filter of every collection, and pages with limit and marker", async () => {
    for (const o of ops.filter(isCollection)) await filters(o);
    expect(found["filters"]).toEqual([]);
    // A filter served now, or refused for another reason, leaves UNSERVED.
    expect(Object.keys(UNSERVED).filter((k) => !stillUnserved.has(k))).toEqual([]);
  }, 60_000);

  it("deletes as documented: 412 on a stale If-Match, 204, then 404", async () => {
    await deletes();
    expect(found["answers"]).toEqual([]);
  }, 60_000);

  it("every request the server accepted is valid by the document, and every operation was called", () => {
    expect(found["accepted"]).toEqual([]);
    expect(ops.filter((o) => !sent.has(o.id)).map(label)).toEqual([]);
    const total = [...sent.values()].reduce((a, b) => a + b, 0);
    console.info(`OpenAPI conformance: ${ops.length} operations, ${total} requests through the validating proxy`);
  });
});

/** Each body the document calls invalid (from a valid one, one field broken at a time) must be refused. */
async function invalidBodies(o: Op): Promise<void> {
  const path = concrete(o);
  const base = (o.method === "post" ? freshBody(o) : o.method === "put" ? writable(o, await current(path)) : {}) ?? {};
  const { props, required } = bodySchema(o);
  const cases: [string, Schema][] = [];
  for (const [k, p] of props) for (const [what, v] of pastValues(p, base[k])) cases.push([`${k} ${what}`, { ...base, [k]: v }]);
  if (o.method !== "patch") for (const k of required) cases.push([`without ${k}`, Object.fromEntries(Object.entries(base).filter(([f]) => f !== k))]);
  for (const [what, body] of cases) refused(o, what, await call(o, path, { body }, `(${what})`));
}

function refused(o: Op, what: string, r: ProxyAnswer): void {
  if (r.request.length === 0) found["invalid"]!.push(`${label(o)} ${what}: the document does not call it invalid (the suite's value is wrong)`);
  else if (r.status < 400 || r.status >= 500) found["invalid"]!.push(`${label(o)} ${what}: the document calls it invalid (${r.request[0]!.message}), the server answered ${r.status} ${r.text.slice(0, 200)}`);
}

/** Each path variable and query parameter with rules: a value past each must be refused. */
async function invalidParameters(o: Op): Promise<void> {
  const path = concrete(o);
  const segments = path.split("/");
  const names = o.template.split("/");
  const body = o.method === "get" ? undefined : o.method === "post" ? freshBody(o) : o.method === "put" ? writable(o, await current(path)) : {};
  for (const p of (o.op["parameters"] ?? []) as Schema[]) {
    if (p["$ref"] || (p["in"] !== "path" && p["in"] !== "query")) continue;
    for (const [what, v] of pastValues(p["schema"], undefined)) {
      if (typeof v === "object") continue;
      const value = encodeURIComponent(String(v));
      const target = p["in"] === "path" ? segments.map((seg, i) => (names[i] === `{${p["name"]}}` ? value : seg)).join("/") : `${path}?${p["name"]}=${value}`;
      if (target === path) continue;
      refused(o, `${p["in"]} ${p["name"]} ${what}`, await call(o, target, { body }, `(${p["name"]} ${what})`));
    }
  }
}

/** A new item with one field at one of its documented limits: taken (or a conflict), never a 400. */
async function atLimits(o: Op): Promise<void> {
  const path = concrete(o);
  for (const [k, p] of bodySchema(o).props) {
    for (const [what, v] of limitValues(p)) {
      const r = await call(o, path, { body: { ...freshBody(o), [k]: v } }, `(${k} ${what})`);
      if (r.request.length > 0) found["limits"]!.push(`${label(o)} ${k} ${what}: the document calls it invalid (the suite's value is wrong): ${r.request[0]!.message}`);
      // Taken, a conflict with an item there (409), or an item it names not there for it (404: another tenant's pool).
      else if (!(r.status < 300 || r.status === 409 || r.status === 404) && !(r.status === 400 && statedBeside(o, k, r))) {
        found["limits"]!.push(`${label(o)} ${k} ${what}: the document allows it, the server answered ${r.status} ${r.text.slice(0, 300)}`);
      }
    }
  }
}

/**
 * A 400 at a documented limit is a rule between fields the document states beside them (a
 * route's next hop "Normal routes only", a monitor's delay "at least timeout"): each field the
 * server names is another one than the one at its limit, or its description names another field.
 */
function statedBeside(o: Op, k: string, r: ProxyAnswer): boolean {
  const { props } = bodySchema(o);
  const names = props.map(([n]) => n);
  const violations = ((r.json?.["violations"] ?? []) as { property: string }[]).map((v) => v.property);
  return (
    violations.length > 0 &&
    violations.every((p) => {
      const d = String(props.find(([n]) => n === p)?.[1]?.["description"] ?? "");
      return d !== "" && (p !== k || names.some((n) => n !== p && new RegExp(`\\b${n}\\b`).test(d)));
    })
  );
}

/**
 * What the suite found and this change leaves open (issue 50), each with the server's answer:
 * it must still be so, and comes off this list when served or documented.
 */
const UNSERVED: Record<string, string> = {};
const stillUnserved = new Set<string>();

/** Each documented query parameter of a collection, with a value an item has (or a plausible one): 200. */
async function filters(o: Op): Promise<void> {
  const path = concrete(o);
  const list = await call(o, path);
  const items = (Array.isArray(list.json) ? list.json : []) as Schema[];
  for (const p of (o.op["parameters"] ?? []) as Schema[]) {
    if (p["in"] !== "query") continue;
    const name = String(p["name"]);
    const had = items.map((i) => i[name]).find((v) => v !== null && v !== undefined && typeof v !== "object");
    // A marker is an item's id: its `id`, or for a kind named by another field (a binding's port), its uri's last segment.
    const marker = () => items[0]?.["id"] ?? (typeof items[0]?.["uri"] === "string" ? items[0]["uri"].split("/").pop() : undefined) ?? randomUUID();
    const value = name === "limit" ? 1 : name === "marker" ? marker() : (had ?? sample(p["schema"]));
    const r = await call(o, `${path}?${name}=${encodeURIComponent(String(value))}`, {}, `(?${name}=${value})`);
    const known = UNSERVED[`${o.id} ?${name}`];
    if (known && r.status === 400 && r.text.includes(known)) stillUnserved.add(`${o.id} ?${name}`);
    else if (r.status !== 200) found["filters"]!.push(`${label(o)} ?${name}=${value}: ${r.status} ${r.text.slice(0, 300)}`);
    if (r.request.length > 0) found["filters"]!.push(`${label(o)} ?${name}=${value}: the document calls it invalid (the suite's value is wrong): ${r.request[0]!.message}`);
  }
}

/**
 * Every DELETE: a stale If-Match (412), then an item goes (204), then it is not there (404). Of
 * the items at a path (the suite made several), one still there and not in use (a 409 tries
 * the next).
 */
/** Whether an item is at a path: its GET answers 200 (a port's link, which has none, while the port has a peer). */
async function isThere(u: string): Promise<boolean> {
  if (!/^\/ports\/[^/]+\/link$/.test(u)) return (await fetch(`${fx.gw}${u}`, { headers: auth() })).status === 200;
  const port = await fetch(`${fx.gw}${u.slice(0, -"/link".length)}`, { headers: auth() });
  return port.status === 200 && ((await port.json()) as Schema)["peerId"] != null;
}

async function deletes(): Promise<void> {
  const known = [...urls];
  const at = (o: Op) => new RegExp(`^${o.template.replace(/\{[^}]+\}/g, "[^/?]+")}$`);
  const firstMade = (o: Op) => known.findIndex((u) => at(o).test(u));
  // The kinds the world made last go first (children before their parents, a pool before its
  // load balancer); of a kind's items, the newest first (made by the suite, in use by nothing).
  const pending = ops.filter((o) => o.method === "delete").sort((a, b) => firstMade(b) - firstMade(a));
  for (const o of pending) {
    const there: string[] = [];
    for (const u of [...known].reverse()) if (at(o).test(u) && (await isThere(u))) there.push(u);
    if (there.length === 0) throw new Error(`no item of the world is left at ${o.template}: add one`);
    expectStatus(o, await call(o, there[0]!, { headers: { "if-match": '"stale"' } }), 412);
    let gone: string | undefined;
    for (const path of there) {
      const r = await call(o, path);
      if (r.status === 204) gone = path;
      else expectStatus(o, r, 409);
      if (gone) break;
    }
    if (!gone) found["answers"]!.push(`${label(o)}: no item at it could be deleted`);
    else expectStatus(o, await call(o, gone), 404);
  }
}

/** Success and error answers of one catalog operation (writes keep the world: PUT and PATCH write what is there). */
async function answers(o: Op): Promise<void> {
  const path = concrete(o);
  const method = o.method.toUpperCase();
  let ok: ProxyAnswer;
  if (method === "GET") ok = await call(o, path);
  else if (method === "POST") ok = await call(o, path, { body: freshBody(o) });
  else {
    await call(opFor("get", o.template), path);
    ok = await call(o, path, { body: method === "PATCH" ? {} : writable(o, await current(path)) });
  }
  const documented = Object.keys(o.op["responses"]);
  if (!(ok.status >= 200 && ok.status < 300 && documented.includes(String(ok.status)))) found["answers"]!.push(`${label(o)} ${path}: ${ok.status} ${ok.text.slice(0, 300)}`);
  if (needsToken(o)) expectStatus(o, await call(o, path, { headers: { "x-auth-token": "" }, body: method === "GET" ? undefined : {} }), 401);
  if (documented.includes("406")) expectStatus(o, await call(o, path, { headers: { accept: "text/csv" }, body: method === "GET" ? undefined : freshBody(o) }), 406);
  const etag = ok.headers.get("etag");
  if (method === "GET" && etag && documented.includes("304")) expectStatus(o, await call(o, path, { headers: { "if-none-match": etag } }), 304);
  if (documented.includes("412")) expectStatus(o, await call(o, path, { headers: { "if-match": '"stale"' }, body: method === "PATCH" ? {} : writable(o, await current(path)) }), 412);
  if (documented.includes("415")) expectStatus(o, await call(o, path, { headers: { "content-type": "text/plain" }, body: "x" }), 415);
  if (documented.includes("413")) expectStatus(o, await call(o, path, { body: { name: "a".repeat(1024 * 1024) } }), 413);
  const missing = path.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?=[^/]*$)/, "00000000-0000-4000-8000-00000000dead");
  if (missing !== path) expectStatus(o, await call(o, missing, { body: method === "GET" ? undefined : freshBody(o) }), 404);
}

function expectStatus(o: Op, r: ProxyAnswer, status: number): void {
  if (r.status !== status) found["answers"]!.push(`${label(o)}: expected ${status}, got ${r.status} ${r.text.slice(0, 200)}`);
}

function freshBody(o: Op): Schema | undefined {
  if (!o.op["requestBody"]) return undefined;
  const make = bodies[o.id];
  if (o.method === "post" && !make) throw new Error(`no body for ${label(o)}: add one to the world`);
  return make ? make() : {};
}

function opFor(method: string, template: string): Op {
  const o = ops.find((x) => x.method === method && x.template === template);
  if (!o) throw new Error(`the document has no ${method} ${template}`);
  return o;
}

/** The gateway's own paths: the root documents, login, logout, the feed's refusals, the probes. */
async function gatewayOwn(): Promise<void> {
  const basic = (pw: string) => ({ authorization: `Basic ${Buffer.from(`admin:${pw}`).toString("base64")}`, "x-auth-token": "" });
  const login = opById("login");
  expectStatus(login, await call(login, "/login", { headers: basic(fx.stack.adminPassword) }), 200);
  expectStatus(login, await call(login, "/login", { headers: basic("wrong-password") }), 401);
  for (const id of ["logout", "logoutEverywhere"]) {
    const token = await fx.stack.login(fx.gw, `logout-${fx.stack.id}`, "conformance-password-1");
    const o = opById(id);
    expectStatus(o, await call(o, o.template, { headers: { "x-auth-token": token } }), 204);
    expectStatus(o, await call(o, o.template, { headers: { "x-auth-token": "" } }), 401);
  }
  const events = opById("events");
  expectStatus(events, await call(events, "/events?lastEventId=%21%21", { headers: { accept: "text/event-stream" } }), 400);
  expectStatus(events, await call(events, "/events", { headers: { "x-auth-token": "" } }), 401);
  // The stream itself never ends, so Prism (which reads an answer whole) cannot see it: its status and type here.
  const ac = new AbortController();
  const stream = await fetch(`${fx.gw}/events`, { headers: { ...auth(), accept: "text/event-stream" }, signal: ac.signal });
  const streamType = Object.keys(events.op["responses"]["200"]["content"])[0];
  if (stream.status !== 200 || stream.headers.get("content-type")?.split(";")[0] !== streamType) found["answers"]!.push(`${label(events)}: ${stream.status} ${stream.headers.get("content-type")}`);
  ac.abort();
  for (const id of ["healthz", "readyz", "metrics", "openapi"]) expectStatus(opById(id), await call(opById(id), opById(id).template), 200);
}
