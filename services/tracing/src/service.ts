// The tracing service: trace requests, and the deletion of a device's traces when the bridge
// or the routing service announces the device deleted (a durable consumer per device type: what
// is announced while this service is down is handled when it is back).
import type { ServiceSpec } from "@vnm/kit";
import { followDeletions } from "./devices.ts";
import { migrations } from "./migrations.ts";
import { traceRequests } from "./traces.ts";

export const service: ServiceSpec = {
  domain: "tracing",
  migrations,
  // Their checks call the bridge and routing services: they need this service's context.
  resources: [(svc) => traceRequests(svc)],
  onStart: async (svc) => {
    followDeletions(svc);
  },
};
