import { runService } from "@vnm/kit";
import { bridgeHandlers } from "./bridges.ts";
import { migrations } from "./migrations.ts";

await runService({
  domain: "bridge",
  migrations,
  services: (store) => ({
    "vnm.bridge.v1.BridgeService": bridgeHandlers(store),
  }),
});
