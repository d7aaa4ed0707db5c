// The bridge service reached directly over gRPC (no gateway) still validates its input and
// refuses callers without a valid token.
import { generateKeyPairSync } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const call = (rpc: string, req: unknown, bearer?: string | null) => svc.call("vnm.bridge.v1.BridgeService", rpc, req, bearer);
const token: DirectService["token"] = (who, key) => svc.token(who, key);

beforeAll(async () => {
  svc = await directService("bridge");
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a bad field with INVALID_ARGUMENT and its violations", async () => {
  const { err } = await call("CreateBridge", { bridge: { name: "x".repeat(256), inboundFilterId: "nope" } });
  expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  const violations = svc.violations({ err, res: undefined });
  expect(violations.map((v: { property: string }) => v.property).sort()).toEqual(["inboundFilterId", "name"]);
});

it("creates a bridge; an id that is not a UUID is NOT_FOUND", async () => {
  const { err, res } = await call("CreateBridge", { bridge: { name: "direct" } });
  expect(err).toBeNull();
  expect((res as { name: string }).name).toBe("direct");
  expect((await call("GetBridge", { id: "nope" })).err?.code).toBe(grpc.status.NOT_FOUND);
});

it("refuses a call without identity, with a forged or expired token", async () => {
  for (const bearer of [null, "v1.e30.AAAA", token({}, generateKeyPairSync("ed25519").privateKey), token({ exp: 1 })]) {
    const { err } = await call("ListBridges", {}, bearer);
    expect(err?.code).toBe(grpc.status.UNAUTHENTICATED);
  }
});

it("applies tenancy to a caller reached directly: other tenants' bridges are hidden", async () => {
  const a = (await call("CreateBridge", { bridge: { name: "of-a", tenantId: "A" } })).res as { id: string };
  const asB = token({ role: "tenant_admin", tenantId: "B" });
  expect((await call("GetBridge", { id: a.id }, asB)).err?.code).toBe(grpc.status.NOT_FOUND);
  expect((await call("DeleteBridge", { id: a.id }, asB)).err?.code).toBe(grpc.status.NOT_FOUND);
  const list = (await call("ListBridges", {}, asB)).res as { items?: unknown[] };
  expect(list.items ?? []).toEqual([]);
  const asUserA = token({ role: "tenant_user", tenantId: "A" });
  expect((await call("GetBridge", { id: a.id }, asUserA)).err).toBeNull();
  expect((await call("DeleteBridge", { id: a.id }, asUserA)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});
