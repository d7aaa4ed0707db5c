// The tunnel/VTEP service: tunnel zones, VTEPs, and one OVSDB session per VTEP across every
// replica of this service, keeping the device's state in the VTEP's row.
import { mergeHandlers, type ServiceSpec } from "@vnm/kit";
import { tunnelZones, vteps } from "./kinds.ts";
import { migrations } from "./migrations.ts";
import { VtepSessions } from "./sessions.ts";

export const service: ServiceSpec = {
  domain: "tunnel",
  migrations,
  resources: [tunnelZones, vteps],
  services: ({ store }) =>
    mergeHandlers(tunnelZones.referencedLists(store, "ListTunnelZoneHosts"), vteps.referencedLists(store, "ListVtepBindings"), {
      // The switch's ports, as the device last said.
      "vnm.tunnel.v1.VtepService": {
        ListVtepPorts: async (req: { id: string }) => ({ items: (await vteps.locate(store.pool, req)).row["ports"] }),
      },
    }),
  onStart: async (svc) => {
    const sessions = new VtepSessions(svc);
    sessions.start();
    // A VTEP created or deleted on any replica: every replica looks at once.
    svc.bus.subscribe(["tunnel.Vtep.created", "tunnel.Vtep.deleted"], () => sessions.look());
    return () => sessions.stop();
  },
};
