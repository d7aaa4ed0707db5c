// The compat service reached directly over gRPC (no gateway): it checks its input and keeps
// each tenant to its own resources without the gateway's help.
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;

beforeAll(async () => {
  svc = await directService("compat");
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a protocol that is not a name or number (the JSON text the gateway passes on), naming it", async () => {
  const r = await svc.call("vnm.compat.v1.CompatSecurityGroupRuleService", "CreateCompatSecurityGroupRule", {
    security_group_rule: { tenant_id: "t", direction: "ingress", security_group_id: "00000000-0000-4000-8000-000000000001", protocol: '"06"' },
  });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([{ property: "protocol", message: expect.stringMatching(/integer from 0 to 255/) }]);
});

it("hides another tenant's pool as missing", async () => {
  const a = svc.token({ role: "tenant_admin", tenantId: "A" });
  const b = svc.token({ role: "tenant_admin", tenantId: "B" });
  const p = await svc.call("vnm.compat.v1.CompatPoolService", "CreateCompatPool", { pool: { tenant_id: "A" } }, a);
  expect(p.err).toBeNull();
  expect((await svc.call("vnm.compat.v1.CompatPoolService", "GetCompatPool", { id: p.res.id }, b)).err?.code).toBe(grpc.status.NOT_FOUND);
  const m = await svc.call("vnm.compat.v1.CompatMemberService", "CreateCompatMember", { member: { tenant_id: "B", pool_id: p.res.id } }, b);
  expect(m.err?.code).toBe(grpc.status.NOT_FOUND);
});
