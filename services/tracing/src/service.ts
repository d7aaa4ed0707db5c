// The tracing service: trace requests, and the deletion of a bridge's traces when the bridge
// service announces the bridge deleted (a durable consumer: what is announced while this
// service is down is handled when it is back).
import type { ServiceSpec } from "@vnm/kit";
import { onBridgeDeleted } from "./bridges.ts";
import { migrations } from "./migrations.ts";
import { traceRequests } from "./traces.ts";

export const service: ServiceSpec = {
  domain: "tracing",
  migrations,
  // Their checks call the bridge service: they need this service's context.
  resources: [(svc) => traceRequests(svc)],
  onStart: async (svc) => {
    svc.bus.consume("tracing-bridge-deletions", ["bridge.Bridge.deleted"], onBridgeDeleted(svc));
  },
};
