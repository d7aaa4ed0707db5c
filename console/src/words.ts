// Names as a person reads them, from the identifiers of the proto files: "LoadBalancer" ->
// "Load balancers", "Vtep" -> "VTEPs", "DhcpV6Subnet" -> "DHCPv6 subnets", "adminStateUp" ->
// "Admin state up". Abbreviations are written as networking writes them.

const ABBREVIATIONS: Record<string, string> = {
  arp: "ARP",
  bw: "BW",
  dhcp: "DHCP",
  dns: "DNS",
  dscp: "DSCP",
  id: "ID",
  ids: "IDs",
  ip: "IP",
  ips: "IPs",
  l2: "L2",
  lb: "LB",
  mac: "MAC",
  ms: "ms",
  mtu: "MTU",
  qos: "QoS",
  tcp: "TCP",
  udp: "UDP",
  uri: "URI",
  vip: "VIP",
  vlan: "VLAN",
  vtep: "VTEP",
  vxlan: "VXLAN",
  addrs: "addresses",
  addr: "address",
};

/** The words of an identifier: camelCase, snake_case and ALLCAPS runs split. */
function words(id: string): string[] {
  return id
    .replace(/_/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/\s+/)
    .filter((w) => w !== "");
}

function spell(word: string): string {
  const lower = word.toLowerCase();
  const many = lower.endsWith("s") ? ABBREVIATIONS[lower.slice(0, -1)] : undefined;
  if (many && many === many.toUpperCase()) return `${many}s`;
  return ABBREVIATIONS[lower] ?? (word.length > 1 && word === word.toUpperCase() && /[A-Z]/.test(word) ? word : lower);
}

/** Words joined, an IP version stuck to what it versions ("DHCP V6" -> "DHCPv6"). */
function join(ws: string[]): string {
  return ws.join(" ").replace(/ V([46])\b/g, "v$1");
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** An identifier as a phrase: "peer_ports" -> "Peer ports". */
export function phrase(id: string): string {
  return capitalize(join(words(id).map(spell)));
}

/** A field's label: "adminStateUp" -> "Admin state up", "tenant_id" -> "Tenant ID". */
export function fieldLabel(name: string): string {
  return phrase(name);
}

function plural(word: string): string {
  if (word === word.toUpperCase() && /[A-Z]/.test(word)) return `${word}s`;
  if (/[^aeiou]y$/.test(word)) return `${word.slice(0, -1)}ies`;
  if (/(s|x|ch|sh)$/.test(word)) return `${word}es`;
  return `${word}s`;
}

/** A kind's names from its display name: "LoadBalancer" -> Load balancer / Load balancers. */
export function kindNames(displayName: string): { singular: string; plural: string } {
  const ws = words(displayName).map(spell);
  const many = [...ws.slice(0, -1), plural(ws.at(-1)!)];
  return { singular: capitalize(join(ws)), plural: capitalize(join(many)) };
}

/** A name inside a sentence: "Bridge" -> "bridge", "DHCP subnets" and "QoS policy" kept. */
export function inSentence(name: string): string {
  const first = name.split(" ", 1)[0]!;
  return /[A-Z]/.test(first.slice(1)) ? name : name.charAt(0).toLowerCase() + name.slice(1);
}

/** The API's words that are jargon to a person, and what a person reads instead. */
const PLAIN: [RegExp, string][] = [
  [/^may not be null$/i, "is required"],
  [/^may not be empty$/i, "is required"],
  [/^must not be null$/i, "is required"],
  [/^value is required$/i, "is required"],
  [/^Validation error\(s\) found$/i, "Some values were not accepted"],
  [/\bmust be a valid UUID\b/i, "must be an ID (a UUID)"],
  [/^value must be a valid IPv4 address$/i, "must be an IPv4 address, such as 10.0.0.1"],
  [/^value must be a valid IP address$/i, "must be an IP address, such as 10.0.0.1"],
  [/^value length must be at most (\d+) characters$/i, "must be at most $1 characters"],
  [/^value must be greater than or equal to (\S+) and less than or equal to (\S+)$/i, "must be between $1 and $2"],
  [/^value must be in list (.*)$/i, "must be one of $1"],
  [/^is not a filter of this list$/i, "cannot be filtered by"],
  [/^value /i, ""],
];

/** An API message in plain words: "may not be null" -> "is required". */
export function plainWords(message: string): string {
  let out = message.trim();
  for (const [re, plain] of PLAIN) if (re.test(out)) out = out.replace(re, plain);
  return out;
}
