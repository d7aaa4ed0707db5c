// The console's catalog as the build makes it: a field whose values the proto closes offers
// exactly those values (a choice, not free text), whether the proto states them as a rule
// (`string.in`) or a service's declaration still does.
import { expect, it } from "vitest";
import { consoleCatalog } from "../catalog.ts";

it("offers the values a field's rules in the proto allow", async () => {
  const c = await consoleCatalog();
  const values = (kind: string, field: string) => c.kinds.find((k) => k.kind === kind)?.fields.find((f) => f.name === field)?.enumValues;
  expect(values("lb.Pool", "lbMethod")).toEqual(["ROUND_ROBIN"]);
  expect(values("lb.Pool", "protocol")).toEqual(["TCP"]);
  expect(values("lb.HealthMonitor", "type")).toEqual(["TCP"]);
  expect(values("tracing.TraceRequest", "deviceType")).toEqual(["BRIDGE", "PORT", "ROUTER"]);
  expect(values("tunnel.TunnelZone", "type")).toEqual(["gre", "vxlan", "vtep"]);
  expect(values("qos.QosPolicy", "name")).toBeUndefined();
});
