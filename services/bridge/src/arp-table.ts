// The ARP table of a bridge (IP4Mac v1): IPv4-MAC pairs. An entry's path segment is
// <ip>_<mac with '-' (or ':')>; its uri writes the MAC with '-'. The body's fields' rules are
// arp_table.proto's (an IPv4 address, a MAC kept in lower case).
import { isIpv4, parseMac, Resource } from "@vnm/kit";

/** <ip>_<mac with '-' or ':'>; undefined when the segment names no entry. */
export function parseIpMac(segment: unknown): { ip: string; mac: string } | undefined {
  if (typeof segment !== "string") return undefined;
  const i = segment.indexOf("_");
  if (i < 0) return undefined;
  const ip = segment.slice(0, i);
  const mac = parseMac(segment.slice(i + 1));
  return isIpv4(ip) && mac ? { ip, mac } : undefined;
}

interface EntryRow {
  id: string;
  bridge_id: string;
  ip: string;
  mac: string;
}

export const arpEntries = new Resource({
  proto: "vnm.bridge.v1.Ip4MacPair",
  table: "arp_entries",
  parentColumn: "bridge_id",
  key: { read: (req) => parseIpMac(req["ipMacPair"]) },
  columns: (e) => ({ ip: e.ip, mac: e.mac }),
  render: (r: EntryRow) => ({ ip: r.ip, mac: r.mac, selfPath: `/bridges/${r.bridge_id}/arp_table/${r.ip}_${r.mac.replace(/:/g, "-")}` }),
  conflict: (e) => `The ARP table of this bridge already pairs ${e.ip} with ${e.mac}.`,
  // A pair a VTEP's device taught (learned-macs.ts) becomes the operator's when written here: no
  // device sync or unbinding takes it from then on.
  adopts: { unique: ["bridge_id", "ip", "mac"], when: "arp_entries.learned", set: "learned = false" },
});
