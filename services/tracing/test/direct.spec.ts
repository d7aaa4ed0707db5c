// The tracing service reached directly over gRPC (no gateway): it checks what the gateway
// would have, keeps traces to administrators, and answers UNAVAILABLE (never a guess) for a
// BRIDGE trace while it cannot reach the bridge service.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const call = (rpc: string, req: unknown, token?: string) => svc.call("vnm.tracing.v1.TraceRequestService", rpc, req, token);
const PORT = "00000000-0000-4000-8000-0000000000c1";

beforeAll(async () => {
  // A bridge service address where nothing listens.
  svc = await directService("tracing", { VNM_BRIDGE_ADDR: "127.0.0.1:1" });
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a condition that is not a JSON object, and bad device fields, naming each", async () => {
  const r = await call("CreateTraceRequest", { traceRequest: { name: "t", deviceType: "HOST", deviceId: "x", condition: "[1]" } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r).map((v) => v.property)).toEqual(["deviceType", "deviceId", "condition"]);
});

it("keeps 64-bit values exact and defaults them", async () => {
  const r = await call("CreateTraceRequest", { traceRequest: { name: "t", deviceType: "PORT", deviceId: PORT, condition: "{}", limit: "9007199254740993" } });
  expect(r.err).toBeNull();
  expect(r.res.limit).toBe("9007199254740993");
  const d = await call("CreateTraceRequest", { traceRequest: { name: "t", deviceType: "PORT", deviceId: PORT, condition: "{}" } });
  expect(d.res.limit).toBe("9223372036854775807");
});

it("a BRIDGE trace while the bridge service cannot be reached is UNAVAILABLE, and nothing is stored", async () => {
  const before = (await call("ListTraceRequests", {})).res.items.length;
  const r = await call("CreateTraceRequest", { traceRequest: { name: "t", deviceType: "BRIDGE", deviceId: PORT, condition: "{}" } });
  expect(r.err?.code).toBe(grpc.status.UNAVAILABLE);
  expect(r.err?.details).toContain("bridge service");
  expect((await call("ListTraceRequests", {})).res.items.length).toBe(before);
});

it("serves administrators only", async () => {
  const tenantAdmin = svc.token({ role: "tenant_admin", tenantId: "acme" });
  expect((await call("ListTraceRequests", {}, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});
