// The routing service: routes on routers, and L2 insertions.
import type { ServiceSpec } from "@vnm/kit";
import { ipAddrGroupAddrs, ipAddrGroups } from "./ip-addr-groups.ts";
import { l2Insertions } from "./l2-insertions.ts";
import { migrations } from "./migrations.ts";
import { routes } from "./routes.ts";

export const service: ServiceSpec = {
  domain: "routing",
  migrations,
  resources: [routes, l2Insertions, ipAddrGroups, ipAddrGroupAddrs],
};
