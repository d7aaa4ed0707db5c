// The bridge service reached directly over gRPC (no gateway) still validates its input and
// refuses callers without a valid token, and parts calling as themselves where its methods do
// not name them (vnm.api.callers).
import { generateKeyPairSync } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { AUTH_SERVICE, createUpstream, loadGrpc } from "@vnm/kit";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

let svc: DirectService;
const call = (rpc: string, req: unknown, bearer?: string | null) => svc.call("vnm.bridge.v1.BridgeService", rpc, req, bearer);
const token: DirectService["token"] = (who, key) => svc.token(who, key);

beforeAll(async () => {
  // Two parts with credentials at its identity service: tracing, which reads bridges, and tunnel, which does not.
  svc = await directService("bridge", {}, ["tracing", "tunnel"]);
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

/** A part's own token, for its credential, from the identity service the bridge service trusts. */
async function partToken(part: string): Promise<string> {
  const up = createUpstream(loadGrpc(), [{ name: AUTH_SERVICE, domain: "identity" }], () => svc.identity.address);
  try {
    const credential = svc.identity.envFor(part)["VNM_SERVICE_CREDENTIAL"];
    return String((await up.call(AUTH_SERVICE, "IssueServiceToken", { name: part, credential }, 5_000)).response["token"]);
  } finally {
    up.close();
  }
}

it("answers a part calling as itself only where the method names it: tracing reads a bridge, nothing else; tunnel nothing", async () => {
  const made = (await call("CreateBridge", { bridge: { name: "called" } })).res as { id: string };
  const tracing = await partToken("tracing");
  const tunnel = await partToken("tunnel");
  expect((await call("GetBridge", { id: made.id }, tracing)).res).toMatchObject({ id: made.id, name: "called" });
  const refused: [string, unknown, string][] = [
    ["GetBridge", { id: made.id }, tunnel],
    ["ListBridges", {}, tunnel],
    ["ListBridges", {}, tracing],
    ["DeleteBridge", { id: made.id }, tracing],
  ];
  for (const [rpc, request, bearer] of refused) {
    const { err } = await call(rpc, request, bearer);
    expect(err?.code, rpc).toBe(grpc.status.PERMISSION_DENIED);
    expect(err?.details).toMatch(new RegExp(`The (tracing|tunnel) part may not call vnm.bridge.v1.BridgeService/${rpc}`));
  }
  // A user's token is not concerned, and the refused deletion did not happen.
  expect((await call("GetBridge", { id: made.id })).res).toMatchObject({ id: made.id });
});
