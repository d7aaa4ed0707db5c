import { runService } from "@vnm/kit";
import { lbHandlers } from "./handlers.ts";
import { healthMonitors, loadBalancers, pools } from "./kinds.ts";
import { migrations } from "./migrations.ts";

await runService({
  domain: "lb",
  migrations,
  resources: [loadBalancers, pools, healthMonitors],
  services: lbHandlers,
});
