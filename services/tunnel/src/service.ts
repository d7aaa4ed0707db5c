// The tunnel/VTEP service: tunnel zones, hosts and their zones (hosts.ts), VTEPs, and one
// OVSDB session per VTEP across every replica of this service, keeping the device's state in
// the VTEP's row and its ports' rows.
import { ApiError, loadConfig, parsePositiveInt, type ServiceSpec } from "@vnm/kit";
import { AddressPolicy } from "./address-policy.ts";
import { bindingsChanged, onBridgesDeleted, vtepBindings } from "./bindings.ts";
import { hostStanding, hosts, tunnelZoneHosts } from "./hosts.ts";
import { DEFAULT_STATE_BUDGET } from "./device.ts";
import { tunnelZones, vtepKind } from "./kinds.ts";
import { migrations } from "./migrations.ts";
import { DEFAULT_WRITE_INTERVAL_MS, VtepSessions } from "./sessions.ts";
import { DEFAULT_RECONCILE_MS } from "./vxgw.ts";
import { VxlanPortSync } from "./vxlan-sync.ts";

/** The service's own configuration; a bad value stops it at start, naming the variable (and the entry). */
const configOf = (env: NodeJS.ProcessEnv) =>
  loadConfig(
    {
      policy: { env: "VNM_VTEP_ALLOWED_NETWORKS", default: "", parse: AddressPolicy.parse },
      budget: { env: "VNM_VTEP_STATE_BUDGET_BYTES", default: String(DEFAULT_STATE_BUDGET), parse: parsePositiveInt },
      writeEveryMs: { env: "VNM_VTEP_WRITE_INTERVAL_MS", default: String(DEFAULT_WRITE_INTERVAL_MS), parse: parsePositiveInt },
      reconcileEveryMs: { env: "VNM_VTEP_RECONCILE_MS", default: String(DEFAULT_RECONCILE_MS), parse: parsePositiveInt },
    },
    env,
  );

/** The announcements of what a device holds (vxgw.ts, remote-macs.ts): deploy/nats.conf lets the tunnel user hear them. */
const DEVICE_SOURCES = ["tunnel.VtepBinding.*", "tunnel.TunnelZoneHost.*", "tunnel.Host.*", "bridge.MacPort.*", "bridge.Ip4MacPair.*", "routing.HostInterfacePort.*"];

export const service: ServiceSpec = {
  domain: "tunnel",
  migrations,
  resources: [tunnelZones, tunnelZoneHosts, hosts, (svc) => vtepKind(configOf(svc.env).policy), vtepBindings],
  services: (svc) => {
    const vteps = svc.resources.of("vnm.tunnel.v1.Vtep");
    return {
      "vnm.tunnel.v1.HostService": { GetHostStanding: (req: { id?: unknown }) => hostStanding(svc.store.pool, req) },
      // The switch's ports, as the device last said, in name order.
      "vnm.tunnel.v1.VtepService": {
        ListVtepPorts: async (req: { id: string }) => {
          const { row } = await vteps.locate(svc.store.pool, req);
          const ports = (await svc.store.query<{ name: string; description: string }>("SELECT name, description FROM vtep_ports WHERE vtep_id = $1", [row["id"]])).rows;
          return { items: ports.sort((a, b) => a.name.localeCompare(b.name)).map((p) => ({ ...p, vtepId: row["id"] })) };
        },
        // One port by name, as the device last said: 404 when it lacks it (MidoNet's VtepPortResource).
        GetVtepPort: async (req: { id: string; name?: string }) => {
          const { row } = await vteps.locate(svc.store.pool, req);
          const port = (await svc.store.query<{ name: string; description: string }>("SELECT name, description FROM vtep_ports WHERE vtep_id = $1 AND name = $2", [row["id"], req.name ?? ""])).rows[0];
          if (!port) throw ApiError.notFound(`VTEP ${String(row["id"])} has no port named ${req.name ?? ""}.`);
          return { ...port, vtepId: row["id"] };
        },
      },
    };
  },
  onStart: async (svc) => {
    const sessions = new VtepSessions(svc, configOf(svc.env));
    sessions.start();
    // A VTEP created or deleted on any replica: every replica looks at once.
    svc.bus.subscribe(["tunnel.Vtep.created", "tunnel.Vtep.deleted"], () => sessions.look());
    // Bound bridges' VXLAN ports, asked of the routing service until it answers.
    const vxlan = new VxlanPortSync(svc);
    // What the devices hold, changed anywhere: a binding (on any replica), a bound bridge's MAC
    // or ARP entry, a port bound to a host or unbound, a tunnel zone's member, a host (its
    // flooding proxy weight). The devices this
    // replica programs are reconciled soon; the periodic reconcile catches an announcement missed.
    svc.bus.subscribe(DEVICE_SOURCES, () => sessions.announced());
    // A binding written here: its VXLAN port soon (the write commits first).
    const kick = () => {
      vxlan.kick();
      sessions.announced();
    };
    bindingsChanged.add(kick);
    // A bridge deleted takes its bindings (one deleted before its VXLAN port existed could not be refused).
    svc.bus.consumeBatches("tunnel-bridge-deletions", ["bridge.Bridge.deleted"], onBridgesDeleted(svc));
    vxlan.start();
    return async () => {
      bindingsChanged.delete(kick);
      vxlan.stop();
      await sessions.stop();
    };
  },
};
