// The tunnel/VTEP service: tunnel zones, VTEPs, and one OVSDB session per VTEP across every
// replica of this service, keeping the device's state in the VTEP's row.
import { loadConfig, mergeHandlers, type ServiceContext, type ServiceSpec } from "@vnm/kit";
import { AddressPolicy } from "./address-policy.ts";
import { tunnelZones, vtepKind } from "./kinds.ts";
import { migrations } from "./migrations.ts";
import { VtepSessions } from "./sessions.ts";

/** The service's own configuration; a bad VNM_VTEP_ALLOWED_NETWORKS stops it at start, naming the entry. */
const configOf = (env: NodeJS.ProcessEnv) =>
  loadConfig({ policy: { env: "VNM_VTEP_ALLOWED_NETWORKS", default: "", parse: AddressPolicy.parse } }, env);

/** The kinds and the policy of one running service (resources, services and onStart share them). */
const running = new WeakMap<ServiceContext, { policy: AddressPolicy; vteps: ReturnType<typeof vtepKind> }>();
function partsOf(svc: ServiceContext) {
  let parts = running.get(svc);
  if (!parts) {
    const { policy } = configOf(svc.env);
    parts = { policy, vteps: vtepKind(policy) };
    running.set(svc, parts);
  }
  return parts;
}

export const service: ServiceSpec = {
  domain: "tunnel",
  migrations,
  resources: (svc) => [tunnelZones, partsOf(svc).vteps],
  services: (svc) => {
    const { vteps } = partsOf(svc);
    return mergeHandlers(tunnelZones.referencedLists(svc.store, "ListTunnelZoneHosts"), vteps.referencedLists(svc.store, "ListVtepBindings"), {
      // The switch's ports, as the device last said.
      "vnm.tunnel.v1.VtepService": {
        ListVtepPorts: async (req: { id: string }) => ({ items: (await vteps.locate(svc.store.pool, req)).row["ports"] }),
      },
    });
  },
  onStart: async (svc) => {
    const sessions = new VtepSessions(svc, partsOf(svc).policy);
    sessions.start();
    // A VTEP created or deleted on any replica: every replica looks at once.
    svc.bus.subscribe(["tunnel.Vtep.created", "tunnel.Vtep.deleted"], () => sessions.look());
    return () => sessions.stop();
  },
};
