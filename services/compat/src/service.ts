// The compat service: the /compat family (LBaaS v1 pools, members, VIPs, health monitors, and
// security group rules), with the pool/health-monitor association endpoints (POST, GET of the
// pool's list and of one, DELETE).
import { type CallContext, type ServiceSpec, mergeHandlers } from "@vnm/kit";
import { associate, association, associations, dissociate } from "./associations.ts";
import { healthMonitors, members, pools, vips } from "./lb.ts";
import { migrations } from "./migrations.ts";
import { securityGroupRules } from "./sg-rules.ts";

export const service: ServiceSpec = {
  domain: "compat",
  migrations,
  resources: [pools, members, vips, healthMonitors, securityGroupRules],
  services: ({ store, resources }) => {
    const { rules } = resources;
    if (!rules) throw new Error("compat: its resources were made without the fields' rules");
    return mergeHandlers({
      [pools.info.service]: {
        AssociateHealthMonitor: (req: Record<string, unknown>, ctx: CallContext) => store.tx(ctx, (q, emit) => associate(q, emit, rules, req)),
        ListPoolHealthMonitors: (req: Record<string, unknown>) => associations(store.pool, req),
        GetPoolHealthMonitor: (req: Record<string, unknown>) => association(store.pool, req),
        DissociateHealthMonitor: async (req: Record<string, unknown>, ctx: CallContext) => {
          await store.tx(ctx, (q, emit) => dissociate(q, emit, resources, req, ctx));
          return {};
        },
      },
    });
  },
};
