// Ids two parts work out alike, with no call between them: name-based UUIDs (the version 5
// layout, RFC 9562) of what the id stands for.
import { createHash } from "node:crypto";

/** A name-based UUID of `name` (SHA-1, version and variant bits set as RFC 9562's version 5). */
function nameUuid(name: string): string {
  const h = createHash("sha1").update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * The id of a bridge's VXLAN port toward a VTEP (vtep-bindings.md): the routing service makes the
 * port with it, the tunnel service names the port by it in the bridge's MAC table.
 */
export function vxlanPortId(bridgeId: string, vtepId: string): string {
  return nameUuid(`vnm:vxlan-port:${bridgeId.toLowerCase()}:${vtepId.toLowerCase()}`);
}
