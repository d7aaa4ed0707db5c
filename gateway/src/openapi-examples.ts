// Examples for GET /openapi.json: one representation of every message, as a client would send
// it (request) or receive it (response), made from the catalog. A field takes the example its
// name gives (an id is a UUID, an address an address), else one of its type; a closed set its
// first value; a link the path it leads to, from the message's own example fields.
import type { FieldInfo, MessageInfo } from "@vnm/kit";

/** The address the examples' links start with. */
export const EXAMPLE_BASE = "http://127.0.0.1:8080";

const UUIDS = ["5f2b7c9e-3a41-4d6b-9c1e-8b2f0a7d4e61", "a3c1e5f7-9b2d-4f6a-8c0e-1d3b5a7c9e2f", "0e9d8c7b-6a5f-4e3d-9c2b-1a0f9e8d7c6b"];

/** Examples by field name: the same name means the same thing across the API. */
const BY_NAME: Record<string, unknown> = {
  name: "blue",
  tenantId: "acme",
  tenant_id: "acme",
  description: "front-end traffic",
  password: "k7-Vq2mRz9pL4wX",
  subnetPrefix: "10.0.0.0",
  subnetLength: 24,
  destinationPrefix: "169.254.169.254",
  destinationLength: 32,
  gatewayAddr: "10.0.0.1",
  defaultGateway: "10.0.0.1",
  serverAddr: "10.0.0.2",
  dnsServerAddrs: ["10.0.0.53"],
  interfaceMTU: 1450,
  ipAddr: "10.0.0.10",
  ip: "10.0.0.10",
  address: "10.0.0.10",
  macAddr: "02:00:00:00:00:01",
  mac: "02:00:00:00:00:01",
  prefix: "2001:db8::",
  prefixLength: 64,
  vlanId: 100,
  vlan: 100,
  srcNetworkAddr: "10.0.0.0",
  srcNetworkLength: 24,
  dstNetworkAddr: "10.1.0.0",
  dstNetworkLength: 16,
  nextHopGateway: "10.0.0.254",
  weight: 100,
  managementIp: "192.0.2.10",
  managementPort: 6632,
  tunnelIpAddrs: ["192.0.2.20"],
  protocol_port: 80,
  port_range_min: 22,
  port_range_max: 22,
  connection_limit: 1000,
  delay: 5,
  maxRetries: 3,
  max_retries: 3,
  timeout: 2,
  position: 1,
  limit: 100,
  creationTimestampMs: 1767225600000,
  condition: { dlType: 2048, nwProto: 6 },
  remote_ip_prefix: "192.0.2.0/24",
  cookie_name: "session",
  roles: ["tenant_admin"],
  optName: "domain-name",
  optValue: "example.org",
  status_description: "",
  protocol: "TCP",
};

/** The example of a field that is not a link, or undefined to leave it out. */
function fieldExample(f: FieldInfo, ids: () => string): unknown {
  const named = BY_NAME[f.name];
  const closed = f.values ?? f.enumValues;
  if (closed && !(named !== undefined && [named].flat().every((v) => typeof v === "string" && closed.includes(v)))) return f.repeated ? [closed[0]] : closed[0];
  if (named !== undefined && !f.message) {
    const v = named;
    // A compat security group rule's protocol is a name or a number.
    if (f.jsonValue) return "tcp";
    return f.repeated && !Array.isArray(v) ? [v] : v;
  }
  if (f.jsonObject) return {};
  if (f.jsonValue) return "any JSON value";
  if (/(^id|Id|_id|Ids|_ids|^hostId)$/.test(f.name) || f.name === "id") return f.repeated ? [ids()] : ids();
  if (f.message) return undefined; // filled by the caller (nested examples)
  if (f.type === "bool") return f.repeated ? [true] : true;
  if (/int|fixed/.test(f.type)) return f.repeated ? [1] : 1;
  if (f.type === "double" || f.type === "float") return 1.5;
  return f.repeated ? ["text"] : "text";
}

/**
 * A message's example: in a request, without read-only fields and links; in a response,
 * without write-only fields, with every link resolved against the example's own fields.
 */
export function exampleOf(m: MessageInfo, mode: "request" | "response", depth = 0): Record<string, unknown> {
  let n = 0;
  const ids = () => UUIDS[n++ % UUIDS.length]!;
  const out: Record<string, unknown> = {};
  const links: FieldInfo[] = [];
  for (const f of m.fields) {
    if (f.internal) continue;
    if (mode === "request" && (f.behaviors.has("OUTPUT_ONLY") || f.link)) continue;
    if (mode === "response" && f.behaviors.has("INPUT_ONLY")) continue;
    if (f.link) {
      links.push(f);
      continue;
    }
    if (f.message) {
      if (depth > 3) continue;
      const nested = exampleOf(f.message, mode, depth + 1);
      out[f.name] = f.repeated ? [nested] : nested;
      continue;
    }
    const v = fieldExample(f, ids);
    if (v !== undefined) out[f.name] = v;
  }
  // Placeholders naming a field not shown (a parent's id) take one example for every link.
  const hidden = new Map<string, unknown>();
  const placeholder = (name: string) => {
    if (name in out) return out[name];
    if (!hidden.has(name)) hidden.set(name, m.byName.has(name) ? fieldExample(m.byName.get(name)!, ids) : undefined);
    return hidden.get(name);
  };
  for (const f of links) {
    // A placeholder naming a field takes its example; others (client templates) stay as written.
    const path = f.link!.replace(/\{(\w+)\}/g, (whole, name: string) => {
      const v = placeholder(name);
      if (v === undefined) return whole;
      return name === "subnetPrefix" ? String(v) : encodeURIComponent(String(v));
    });
    out[f.name] = path.startsWith("{") ? path : EXAMPLE_BASE + path;
  }
  return out;
}
