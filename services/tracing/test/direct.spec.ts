// The tracing service reached directly over gRPC (no gateway): it checks what the gateway
// would have, keeps traces to administrators, and answers UNAVAILABLE (never a guess) for a
// trace while it cannot reach the service that knows its device.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const call = (rpc: string, req: unknown, token?: string) => svc.call("vnm.tracing.v1.TraceRequestService", rpc, req, token);
const PORT = "00000000-0000-4000-8000-0000000000c1";

beforeAll(async () => {
  // Bridge and routing service addresses where nothing listens.
  svc = await directService("tracing", { VNM_BRIDGE_ADDR: "127.0.0.1:1", VNM_ROUTING_ADDR: "127.0.0.1:1" });
});

afterAll(async () => {
  await svc.stop();
});

it("refuses bad device fields, naming each", async () => {
  const r = await call("CreateTraceRequest", { traceRequest: { name: "t", deviceType: "HOST", deviceId: "x", condition: "{}" } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([
    { property: "deviceType", message: "must be in list [BRIDGE, PORT, ROUTER]" },
    { property: "deviceId", message: "must be a valid UUID" },
  ]);
});

it("refuses a condition that is not the text of a JSON object, and stores nothing", async () => {
  for (const condition of ["[1]", "dlType=2048", "null", "7", '"{}"', ""]) {
    const r = await call("CreateTraceRequest", { traceRequest: { name: "t", deviceType: "PORT", deviceId: PORT, condition } });
    expect(r.err?.code, condition).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r), condition).toEqual([{ property: "condition", message: "must be a JSON object" }]);
  }
  expect((await call("ListTraceRequests", {})).res.items ?? []).toEqual([]);
});

// Each rule tracing.proto states, as a peer that skipped the gateway meets it.
it("states each field's rule in its refusal", async () => {
  const cases: [Record<string, unknown>, { property: string; message: string }[]][] = [
    [{}, ["name", "deviceType", "deviceId", "condition"].map((property) => ({ property, message: "value is required" }))],
    [{ id: "t-1", name: "", deviceType: "PORT", deviceId: PORT, condition: "{}" }, [
      { property: "id", message: "must be a valid UUID" },
      { property: "name", message: "must be at least 1 characters" },
    ]],
    [{ name: "x".repeat(256), deviceType: "port", deviceId: PORT, condition: "{}" }, [
      { property: "name", message: "must be at most 255 characters" },
      { property: "deviceType", message: "must be in list [BRIDGE, PORT, ROUTER]" },
    ]],
    [{ name: "a\u0000b", deviceType: "PORT", deviceId: PORT, condition: "{}" }, [{ property: "name", message: "must be valid Unicode text without NUL characters" }]],
  ];
  for (const [traceRequest, expected] of cases) {
    const r = await call("CreateTraceRequest", { traceRequest });
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual(expected);
  }
  expect((await call("ListTraceRequests", {})).res.items ?? []).toEqual([]);
});

// A trace names a device its service must know (devices.ts): with neither service reachable no
// trace can be written, and each write says which service it needs. Traces written (64-bit
// values, defaults, the condition as given, a device id in lower case) are in e2e/test/tracing.
it("a trace while its device's service cannot be reached is UNAVAILABLE naming that service, and nothing is stored", async () => {
  for (const [deviceType, service] of [["BRIDGE", "bridge service"], ["ROUTER", "routing service"], ["PORT", "routing service"]]) {
    const r = await call("CreateTraceRequest", { traceRequest: { name: "t", deviceType, deviceId: PORT, condition: "{}" } });
    expect(r.err?.code, deviceType).toBe(grpc.status.UNAVAILABLE);
    expect(r.err?.details, deviceType).toContain(service);
  }
  expect((await call("ListTraceRequests", {})).res.items ?? []).toEqual([]);
});

it("serves administrators only", async () => {
  const tenantAdmin = svc.token({ role: "tenant_admin", tenantId: "acme" });
  expect((await call("ListTraceRequests", {}, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});
