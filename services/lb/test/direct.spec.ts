// The lb service reached directly over gRPC (no gateway) still validates its input and keeps
// its rules: it trusts nothing the gateway would have checked.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
let TENANT_ADMIN = "";
const call = (service: string, rpc: string, req: unknown, token?: string) => svc.call(`vnm.lb.v1.${service}`, rpc, req, token);
const violations = (r: Awaited<ReturnType<typeof call>>) => svc.violations(r);

beforeAll(async () => {
  svc = await directService("lb");
  TENANT_ADMIN = svc.token({ role: "tenant_admin", tenantId: "acme" });
});

afterAll(async () => {
  await svc.stop();
});

it("refuses bad pool fields with INVALID_ARGUMENT, naming each field and the allowed value", async () => {
  const r = await call("PoolService", "CreatePool", { pool: { loadBalancerId: "nope", lbMethod: "RANDOM", protocol: "UDP" } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(violations(r)).toEqual([
    { property: "loadBalancerId", message: "must be a UUID" },
    { property: "lbMethod", message: "must be ROUND_ROBIN, the only supported value" },
    { property: "protocol", message: "must be TCP, the only supported value" },
  ]);
});

it("refuses a monitor of another type or with negative timings", async () => {
  const r = await call("HealthMonitorService", "CreateHealthMonitor", { healthMonitor: { type: "HTTP", delay: -1 } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(violations(r).map((v) => v.property)).toEqual(["type", "delay"]);
});

it("keeps status its own and checks references; a path id that is not a UUID is NOT_FOUND", async () => {
  const lb = await call("LoadBalancerService", "CreateLoadBalancer", { loadBalancer: { routerId: "5e0c0a00-0000-4000-8000-000000000001" } });
  expect(lb.err).toBeNull();
  expect(lb.res["routerId"]).toBeUndefined();
  const p = await call("PoolService", "CreatePool", { pool: { loadBalancerId: lb.res["id"], lbMethod: "ROUND_ROBIN", status: "INACTIVE" } });
  expect(p.err).toBeNull();
  expect(p.res).toMatchObject({ status: "ACTIVE", protocol: "TCP", adminStateUp: true });
  const missing = "5e0c0a00-0000-4000-8000-000000000002";
  const bad = await call("PoolService", "UpdatePool", { id: p.res["id"], pool: { loadBalancerId: lb.res["id"], lbMethod: "ROUND_ROBIN", healthMonitorId: missing } });
  expect(bad.err?.code).toBe(grpc.status.NOT_FOUND);
  expect(bad.err?.details).toBe(`There is no HealthMonitor with ID ${missing}.`);
  expect((await call("PoolService", "GetPool", { id: "nope" })).err?.code).toBe(grpc.status.NOT_FOUND);
});

it("serves administrators only (the kinds have no tenant): a tenant admin is PERMISSION_DENIED", async () => {
  for (const [service, rpc] of [
    ["LoadBalancerService", "ListLoadBalancers"],
    ["PoolService", "CreatePool"],
    ["HealthMonitorService", "DeleteHealthMonitor"],
  ] as const) {
    const r = await call(service, rpc, { id: "5e0c0a00-0000-4000-8000-000000000003", pool: {} }, TENANT_ADMIN);
    expect(r.err?.code, rpc).toBe(grpc.status.PERMISSION_DENIED);
  }
});
