import { runService } from "@vnm/kit";
import { healthMonitorHandlers, loadBalancerHandlers, poolHandlers } from "./handlers.ts";
import { migrations } from "./migrations.ts";

await runService({
  domain: "lb",
  migrations,
  services: (store) => ({
    "vnm.lb.v1.LoadBalancerService": loadBalancerHandlers(store),
    "vnm.lb.v1.PoolService": poolHandlers(store),
    "vnm.lb.v1.HealthMonitorService": healthMonitorHandlers(store),
  }),
});
