import { runService } from "@vnm/kit";
import { bridgeHandlers } from "./bridges.ts";
import { dhcpHandlers } from "./dhcp.ts";
import { macTableHandlers } from "./mac-table.ts";
import { migrations } from "./migrations.ts";

await runService({
  domain: "bridge",
  migrations,
  services: (store) => ({
    "vnm.bridge.v1.BridgeService": bridgeHandlers(store),
    "vnm.bridge.v1.DhcpService": dhcpHandlers(store),
    "vnm.bridge.v1.MacTableService": macTableHandlers(store),
  }),
});
