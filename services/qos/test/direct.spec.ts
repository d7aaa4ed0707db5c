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
  expect(svc.violations(r)).toEqual([{ property: "name", message: "must be between 1 and 255 characters long" }]);
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
