// The lb service reached directly over gRPC (no gateway) still validates its input and keeps
// its rules: it trusts nothing the gateway would have checked.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
let TENANT_ADMIN = "";
const MISSING = "5e0c0a00-0000-4000-8000-0000000000ff";
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
    { property: "loadBalancerId", message: "must be a valid UUID" },
    { property: "lbMethod", message: "must be in list [ROUND_ROBIN]" },
    { property: "protocol", message: "must be in list [TCP]" },
  ]);
});

it("refuses a monitor of another type or with negative timings", async () => {
  const r = await call("HealthMonitorService", "CreateHealthMonitor", { healthMonitor: { type: "HTTP", delay: -1 } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(violations(r).map((v) => v.property)).toEqual(["type", "delay"]);
});

// Each rule lb.proto states, as a peer that skipped the gateway meets it.
it("states each field's rule in its refusal: ids, the required fields, the timings' range", async () => {
  const range = "must be greater than or equal to 0 and less than or equal to 2147483647";
  const cases: [string, string, Record<string, unknown>, { property: string; message: string }[]][] = [
    ["LoadBalancerService", "CreateLoadBalancer", { loadBalancer: { id: "lb-1" } }, [{ property: "id", message: "must be a valid UUID" }]],
    ["PoolService", "CreatePool", { pool: { id: "p-1", loadBalancerId: MISSING, lbMethod: "ROUND_ROBIN", healthMonitorId: "hm-1" } }, [
      { property: "id", message: "must be a valid UUID" },
      { property: "healthMonitorId", message: "must be a valid UUID" },
    ]],
    ["PoolService", "CreatePool", { pool: {} }, [
      { property: "loadBalancerId", message: "value is required" },
      { property: "lbMethod", message: "value is required" },
    ]],
    ["HealthMonitorService", "CreateHealthMonitor", { healthMonitor: { maxRetries: -2, timeout: -1 } }, [
      { property: "type", message: "value is required" },
      { property: "maxRetries", message: range },
      { property: "timeout", message: range },
    ]],
  ];
  for (const [service, rpc, req, expected] of cases) {
    const r = await call(service, rpc, req);
    expect(r.err?.code, rpc).toBe(grpc.status.INVALID_ARGUMENT);
    expect(violations(r), rpc).toEqual(expected);
  }
  expect((await call("HealthMonitorService", "ListHealthMonitors", {})).res.items ?? []).toEqual([]);
});

it("keeps ids in lower case, whatever case a peer sends them in", async () => {
  const id = "5E0C0A00-0000-4000-8000-0000000000AB";
  const lb = await call("LoadBalancerService", "CreateLoadBalancer", { loadBalancer: { id } });
  expect(lb.err).toBeNull();
  expect(lb.res["id"]).toBe(id.toLowerCase());
  const p = await call("PoolService", "CreatePool", { pool: { loadBalancerId: id, lbMethod: "ROUND_ROBIN" } });
  expect(p.err).toBeNull();
  expect(p.res["loadBalancerId"]).toBe(id.toLowerCase());
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
