// Value formats the parts check outside a message's rules (those are the proto's: rules.ts): a
// path segment naming an item (a UUID, a MAC written either way, an address), and the address
// arithmetic a kind's own rules need (a host inside its subnet).
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isUuid(value: unknown): value is string {
  return typeof value === "string" && UUID_RE.test(value);
}

// ---- network values -------------------------------------------------------------------

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** A MAC address as the API writes it: six groups of two hex digits separated by ':' (vnm/api/rules.proto's mac rule). */
export const MAC_PATTERN = "^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$";
const MAC = new RegExp(MAC_PATTERN);

export function isIpv4(value: string): boolean {
  return IPV4.test(value);
}

/** An IPv6 address in its RFC 5952 form (lower case, longest zero run compressed), or undefined. */
export function canonicalIpv6(value: string): string | undefined {
  if (!/^[0-9A-Fa-f:.]+$/.test(value) || !value.includes(":")) return undefined;
  try {
    const host = new URL(`http://[${value}]/`).hostname;
    return host.slice(1, -1);
  } catch {
    return undefined;
  }
}

/** The 32-bit value of a dotted quad. */
function ipv4ToInt(value: string): number {
  return value.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

/** Whether `ip` lies inside `prefix`/`length`. */
export function ipv4InSubnet(ip: string, prefix: string, length: number): boolean {
  if (length === 0) return true;
  const shift = 32 - length;
  return Math.floor(ipv4ToInt(ip) / 2 ** shift) === Math.floor(ipv4ToInt(prefix) / 2 ** shift);
}

/** A MAC written with ':' or '-' (path segments), in lower case with ':'; undefined if malformed. */
export function parseMac(value: string): string | undefined {
  const s = value.replace(/-/g, ":");
  return MAC.test(s) ? s.toLowerCase() : undefined;
}
