// The tunnel/VTEP service: tunnel zones, VTEPs, and one OVSDB session per VTEP across every
// replica of this service, keeping the device's state in the VTEP's row.
import { loadConfig, mergeHandlers, type ServiceSpec } from "@vnm/kit";
import { AddressPolicy } from "./address-policy.ts";
import { tunnelZones, vtepKind } from "./kinds.ts";
import { migrations } from "./migrations.ts";
import { VtepSessions } from "./sessions.ts";

/** The service's own configuration; a bad VNM_VTEP_ALLOWED_NETWORKS stops it at start, naming the entry. */
const configOf = (env: NodeJS.ProcessEnv) =>
  loadConfig({ policy: { env: "VNM_VTEP_ALLOWED_NETWORKS", default: "", parse: AddressPolicy.parse } }, env);

export const service: ServiceSpec = {
  domain: "tunnel",
  migrations,
  resources: [tunnelZones, (svc) => vtepKind(configOf(svc.env).policy)],
  services: (svc) => {
    const vteps = svc.resources.of("vnm.tunnel.v1.Vtep");
    return mergeHandlers(tunnelZones.referencedLists(svc.store, "ListTunnelZoneHosts"), vteps.referencedLists(svc.store, "ListVtepBindings"), {
      // The switch's ports, as the device last said.
      "vnm.tunnel.v1.VtepService": {
        ListVtepPorts: async (req: { id: string }) => ({ items: (await vteps.locate(svc.store.pool, req)).row["ports"] }),
      },
    });
  },
  onStart: async (svc) => {
    const sessions = new VtepSessions(svc, configOf(svc.env).policy);
    sessions.start();
    // A VTEP created or deleted on any replica: every replica looks at once.
    svc.bus.subscribe(["tunnel.Vtep.created", "tunnel.Vtep.deleted"], () => sessions.look());
    return () => sessions.stop();
  },
};
