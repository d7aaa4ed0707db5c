// The bridge service: what it declares; main.ts runs it on its own, the launcher beside the others.
import { mergeHandlers, type ServiceSpec } from "@vnm/kit";
import { arpEntries } from "./arp-table.ts";
import { bridges, bridgesFor, policyRefs, setVxlanPorts } from "./bridges.ts";
import { dhcpHosts, dhcpSubnets, dhcpV6Subnets } from "./dhcp.ts";
import { setLearnedMacs } from "./learned-macs.ts";
import { macPorts } from "./mac-table.ts";
import { migrations } from "./migrations.ts";

export const service: ServiceSpec = {
  domain: "bridge",
  migrations,
  // Bridges check their filters and mirrors with the policy service: they need this service's calls.
  resources: [(svc) => bridgesFor(svc), dhcpSubnets, dhcpHosts, dhcpV6Subnets, macPorts, arpEntries],
  // Lists of kinds this interface only references: empty, under an item that must exist.
  services: ({ store }) =>
    mergeHandlers(dhcpV6Subnets.referencedLists(store, "ListDhcpV6Hosts"), {
      "vnm.bridge.v1.BridgeService": {
        SetBridgeVxlanPorts: (req: { id?: unknown; portIds?: unknown }) => setVxlanPorts(store, req),
        SetLearnedMacs: (req: { id?: unknown; portId?: unknown; macs?: unknown }) => setLearnedMacs(store, req),
      },
    }),
  onStart: async (svc) => {
    // A deleted chain is cleared from the bridges' filters, a deleted mirror from their mirror lists.
    const referrers = [{ table: "bridges", mirrors: true, resource: bridges }];
    svc.bus.consume("bridge-chain-deletions", ["policy.Chain.deleted"], policyRefs.onChainDeleted(svc, referrers));
    svc.bus.consume("bridge-mirror-deletions", ["policy.Mirror.deleted"], policyRefs.onMirrorDeleted(svc, referrers));
  },
};
