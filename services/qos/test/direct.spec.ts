// The qos service reached directly over gRPC (no gateway): it validates its input and keeps
// each tenant to its own policies without the gateway's help.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const call = (rpc: string, req: unknown, token?: string) => svc.call("vnm.qos.v1.QosPolicyService", rpc, req, token);

beforeAll(async () => {
  svc = await directService("qos");
});

afterAll(async () => {
  await svc.stop();
});

it("refuses an empty name, naming the field", async () => {
  const r = await call("CreateQosPolicy", { qosPolicy: { name: "" } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([{ property: "name", message: "must be at least 1 characters" }]);
});

// Each rule qos.proto states, as a peer that skipped the gateway meets it.
it("states each field's rule in its refusal, and stores nothing refused", async () => {
  const cases: [Record<string, unknown>, { property: string; message: string }[]][] = [
    [{}, [{ property: "name", message: "value is required" }]],
    [{ name: "x".repeat(256) }, [{ property: "name", message: "must be at most 255 characters" }]],
    [{ id: "p-1", name: "ok", description: "d".repeat(1025), tenantId: "a\u0000b" }, [
      { property: "id", message: "must be a valid UUID" },
      { property: "description", message: "must be at most 1024 characters" },
      { property: "tenantId", message: "must be valid Unicode text without NUL characters" },
    ]],
    [{ name: "a\u0000b", tenantId: "t".repeat(256) }, [
      { property: "name", message: "must be valid Unicode text without NUL characters" },
      { property: "tenantId", message: "must be at most 255 characters" },
    ]],
  ];
  for (const [qosPolicy, expected] of cases) {
    const r = await call("CreateQosPolicy", { qosPolicy });
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual(expected);
  }
  expect((await call("ListQosPolicies", {})).res.items ?? []).toEqual([]);
  // The bounds themselves are allowed (characters, not UTF-16 units: 255 emoji are 510 units).
  const ok = await call("CreateQosPolicy", { qosPolicy: { name: "😀".repeat(255), description: "d".repeat(1024) } });
  expect(ok.err).toBeNull();
  expect(ok.res.name).toBe("😀".repeat(255));
  expect((await call("DeleteQosPolicy", { id: ok.res.id })).err).toBeNull();
});

it("keeps a tenant to its own policies: another's is NOT_FOUND, a list holds its own only", async () => {
  const a = svc.token({ role: "tenant_admin", tenantId: "A" });
  const b = svc.token({ role: "tenant_admin", tenantId: "B" });
  const created = await call("CreateQosPolicy", { qosPolicy: { name: "p" } }, a);
  expect(created.err).toBeNull();
  expect(created.res.tenantId).toBe("A");
  expect((await call("GetQosPolicy", { id: created.res.id }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  expect((await call("ListQosDscpRules", { id: created.res.id }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  expect((await call("ListQosPolicies", {}, b)).res.items ?? []).toEqual([]);
  expect((await call("ListQosPolicies", {}, a)).res.items.map((p: { id: string }) => p.id)).toEqual([created.res.id]);
});
