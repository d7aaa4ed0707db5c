// The quota service reached directly over gRPC (no gateway): writes are administrators' even for
// a tenant's own quotas, limits are checked, another tenant's quotas are not found, GetLimits
// answers only the parts its proto names, and bad defaults stop the service at start.
import * as grpc from "@grpc/grpc-js";
import { AUTH_SERVICE, createUpstream, loadGrpc } from "@vnm/kit";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const Q = "vnm.quota.v1.QuotaService";

beforeAll(async () => {
  svc = await directService("quota", { VNM_QUOTA_DEFAULTS: JSON.stringify({ bridges: 10 }) }, ["bridge", "tunnel"]);
});

afterAll(async () => {
  await svc.stop();
});

it("lets administrators alone change quotas, a tenant's own users read theirs, and hides another tenant's", async () => {
  const tenantAdmin = svc.token({ role: "tenant_admin", tenantId: "acme" });
  const refused = await svc.call(Q, "UpdateQuota", { tenantId: "acme", quota: { limits: JSON.stringify({ bridges: 99 }) } }, tenantAdmin);
  expect(refused.err?.code).toBe(grpc.status.PERMISSION_DENIED);
  const set = await svc.call(Q, "UpdateQuota", { tenantId: "acme", quota: { limits: JSON.stringify({ routers: 3 }) } });
  expect(set.err).toBeNull();
  expect(JSON.parse(set.res.limits)).toMatchObject({ bridges: 10, routers: 3, chains: -1 });
  const own = await svc.call(Q, "GetQuota", { tenantId: "acme" }, svc.token({ role: "tenant_user", tenantId: "acme" }));
  expect(own.err).toBeNull();
  expect(JSON.parse(own.res.limits)).toMatchObject({ routers: 3 });
  const other = await svc.call(Q, "GetQuota", { tenantId: "acme" }, svc.token({ role: "tenant_user", tenantId: "other" }));
  expect(other.err?.code).toBe(grpc.status.NOT_FOUND);
});

it("refuses a limit that is no integer of -1 or more, or names no counted collection, naming each", async () => {
  const r = await svc.call(Q, "UpdateQuota", { tenantId: "acme", quota: { limits: JSON.stringify({ widgets: 1, bridges: -5, routers: "3" }) } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r).map((v) => v.property).sort()).toEqual(["limits.bridges", "limits.routers", "limits.widgets"]);
});

/** A part's own token, for its credential, from the identity service the quota service trusts. */
async function part(name: string): Promise<string> {
  const up = createUpstream(loadGrpc(), [{ name: AUTH_SERVICE, domain: "identity" }], () => svc.identity.address);
  try {
    const credential = svc.identity.envFor(name)["VNM_SERVICE_CREDENTIAL"];
    return String((await up.call(AUTH_SERVICE, "IssueServiceToken", { name, credential }, 5_000)).response["token"]);
  } finally {
    up.close();
  }
}

it("answers GetLimits to the parts whose creates check quotas, and to no other part", async () => {
  const bridge = await svc.call(Q, "GetLimits", { tenantId: "acme" }, await part("bridge"));
  expect(bridge.err).toBeNull();
  expect(JSON.parse(bridge.res.limits)).toMatchObject({ bridges: 10, routers: 3 });
  const tunnel = await svc.call(Q, "GetLimits", { tenantId: "acme" }, await part("tunnel"));
  expect(tunnel.err?.code).toBe(grpc.status.PERMISSION_DENIED);
});

it("will not start with defaults naming a collection that has no quota", async () => {
  await expect(directService("quota", { VNM_QUOTA_DEFAULTS: JSON.stringify({ widgets: 1 }) })).rejects.toThrow(/VNM_QUOTA_DEFAULTS/);
});
