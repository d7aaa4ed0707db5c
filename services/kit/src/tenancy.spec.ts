// The tenancy rules as the services apply them to each RPC, from the repository's proto files:
// who may read and write what, and what another tenant's item looks like (not there). No
// database and no processes: the service's handler and its owner lookup are stand-ins that
// record whether they ran.
import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import type { Identity, Role } from "./auth.ts";
import { buildCatalog } from "./catalog.ts";
import { ApiError } from "./errors.ts";
import { type Access, accessRules, coarseDenial, withTenancy } from "./tenancy.ts";

const rules = accessRules(buildCatalog());
const access = (service: string, rpc: string): Access => {
  const a = rules.get(`vnm.${service}/${rpc}`);
  if (!a) throw new Error(`no access rule for ${service}/${rpc}`);
  return a;
};
const BRIDGES = "bridge.v1.BridgeService";
const DHCP = "bridge.v1.DhcpService";

const who = (role: Role, tenantId: string | null): Identity => ({ userId: "u1", name: "someone", role, tenantId, exp: 0 });
const admin = who("admin", null);
const adminInAcme = who("admin", "acme");
const acmeAdmin = who("tenant_admin", "acme");
const acmeUser = who("tenant_user", "acme");

type Obj = Record<string, unknown>;

/** Runs withTenancy with a handler answering `answer` and an owner lookup answering `owner`; records what ran. */
async function call(a: Access, caller: Identity, request: Obj, answer: unknown = {}, owner?: Obj) {
  const seen = { ran: false, ownerAsked: undefined as Obj | undefined };
  const result = withTenancy(
    a,
    caller,
    request,
    async (_service, _rpc, req) => {
      seen.ownerAsked = req;
      if (!owner) throw ApiError.notFound("There is no Bridge with ID nothing.");
      return owner;
    },
    async () => {
      seen.ran = true;
      return structuredClone(answer);
    },
  );
  return { result, seen };
}

/** The error a call rejected with, as gRPC status and message. */
async function refusal(p: Promise<unknown>): Promise<{ code: status; message: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "the call was refused").toBeInstanceOf(ApiError);
  return { code: (err as ApiError).code, message: (err as ApiError).message };
}

describe("rules derived from the proto files", () => {
  it("a bridge has its own tenant; its DHCP subnets follow the bridge; load balancers and users are admin-only", () => {
    expect(access(BRIDGES, "GetBridge")).toMatchObject({ verb: "GET", shape: "item", adminOnly: false, owner: { self: true, tenantField: "tenantId" } });
    expect(access(BRIDGES, "ListBridges")).toMatchObject({ shape: "collection", collectionField: "items", tenantFilterField: "tenant_id" });
    expect(access(DHCP, "CreateDhcpSubnet")).toMatchObject({
      verb: "POST",
      adminOnly: false,
      owner: { rpc: "GetBridge", self: false, params: [["id", "bridgeId"]] },
    });
    expect(access("lb.v1.LoadBalancerService", "GetLoadBalancer").adminOnly).toBe(true);
    // Users have a tenantId field, yet are declared admin-only.
    expect(access("identity.v1.UserService", "ListUsers").adminOnly).toBe(true);
  });
});

describe("admins", () => {
  it("read another tenant's bridge and write anywhere", async () => {
    const { result } = await call(access(BRIDGES, "GetBridge"), admin, { id: "b1" }, { id: "b1", tenantId: "other" });
    await expect(result).resolves.toEqual({ id: "b1", tenantId: "other" });
    const post = await call(access("lb.v1.LoadBalancerService", "CreateLoadBalancer"), admin, { loadBalancer: {} });
    await post.result;
    expect(post.seen.ran).toBe(true);
  });

  it("give a POST without a tenant the project they logged in to, and keep one they name", async () => {
    const without: Obj = { bridge: { name: "b" } };
    await (await call(access(BRIDGES, "CreateBridge"), adminInAcme, without)).result;
    expect(without["bridge"]).toEqual({ name: "b", tenantId: "acme" });
    const named: Obj = { bridge: { name: "b", tenantId: "zeta" } };
    await (await call(access(BRIDGES, "CreateBridge"), adminInAcme, named)).result;
    expect(named["bridge"]).toEqual({ name: "b", tenantId: "zeta" });
    const noProject: Obj = { bridge: { name: "b" } };
    await (await call(access(BRIDGES, "CreateBridge"), admin, noProject)).result;
    expect(noProject["bridge"]).toEqual({ name: "b" });
  });
});

describe("tenant admins", () => {
  it("read and write their tenant's bridges; a POST without a tenant takes theirs", async () => {
    const got = await call(access(BRIDGES, "GetBridge"), acmeAdmin, { id: "b1" }, { id: "b1", tenantId: "acme" });
    await expect(got.result).resolves.toEqual({ id: "b1", tenantId: "acme" });
    const body: Obj = { bridge: { name: "b" } };
    await (await call(access(BRIDGES, "CreateBridge"), acmeAdmin, body)).result;
    expect(body["bridge"]).toEqual({ name: "b", tenantId: "acme" });
    const put = await call(access(BRIDGES, "UpdateBridge"), acmeAdmin, { id: "b1", bridge: { name: "c" } }, {}, { id: "b1", tenantId: "acme" });
    await put.result;
    expect(put.seen).toEqual({ ran: true, ownerAsked: { id: "b1" } });
  });

  it("a body that is not an object is a 400, and nothing is written", async () => {
    for (const sent of ["b", ["b"], 7]) {
      const { result, seen } = await call(access(BRIDGES, "CreateBridge"), acmeAdmin, { bridge: sent });
      expect(await refusal(result), JSON.stringify(sent)).toEqual({ code: status.INVALID_ARGUMENT, message: "The body must be a JSON object" });
      expect(seen.ran).toBe(false);
    }
  });

  it("may not hand an item to another tenant (403), and nothing is written", async () => {
    const { result, seen } = await call(access(BRIDGES, "CreateBridge"), acmeAdmin, { bridge: { name: "b", tenantId: "zeta" } });
    expect(await refusal(result)).toEqual({ code: status.PERMISSION_DENIED, message: "You may not assign another tenant's tenantId" });
    expect(seen.ran).toBe(false);
  });

  it("are refused admin-only kinds (403) before anything is read", async () => {
    for (const [service, rpc, request] of [
      ["lb.v1.LoadBalancerService", "GetLoadBalancer", { id: "x" }],
      ["lb.v1.LoadBalancerService", "ListLoadBalancers", {}],
      ["identity.v1.UserService", "CreateUser", { user: { name: "n", tenantId: "acme" } }],
    ] as const) {
      const { result, seen } = await call(access(service, rpc), acmeAdmin, { ...request });
      expect(await refusal(result), `${service}/${rpc}`).toEqual({ code: status.PERMISSION_DENIED, message: "Only administrators may use this resource" });
      expect(seen).toEqual({ ran: false, ownerAsked: undefined });
    }
  });
});

describe("tenant users", () => {
  it("read their tenant's items", async () => {
    const { result } = await call(access(BRIDGES, "GetBridge"), acmeUser, { id: "b1" }, { id: "b1", tenantId: "acme" });
    await expect(result).resolves.toMatchObject({ id: "b1" });
  });

  it("may not write, even in their own tenant (403, decided without data)", async () => {
    for (const [rpc, request] of [
      ["CreateBridge", { bridge: { name: "b" } }],
      ["UpdateBridge", { id: "b1", bridge: { name: "b" } }],
      ["DeleteBridge", { id: "b1" }],
    ] as const) {
      const { result, seen } = await call(access(BRIDGES, rpc), acmeUser, { ...request }, {}, { id: "b1", tenantId: "acme" });
      expect(await refusal(result), rpc).toEqual({ code: status.PERMISSION_DENIED, message: "Tenant users may only read" });
      expect(seen).toEqual({ ran: false, ownerAsked: undefined });
    }
    expect(coarseDenial(access(BRIDGES, "GetBridge"), acmeUser)).toBeUndefined();
  });
});

describe("another tenant's item is not there", () => {
  const hidden = { code: status.NOT_FOUND, message: "There is no Bridge with ID b9." };

  it("reading it by id is a 404 naming only the id", async () => {
    const { result } = await call(access(BRIDGES, "GetBridge"), acmeAdmin, { id: "b9" }, { id: "b9", tenantId: "zeta", name: "secret" });
    expect(await refusal(result)).toEqual(hidden);
  });

  it("an update or delete of it is a 404 and never runs", async () => {
    for (const rpc of ["UpdateBridge", "DeleteBridge"]) {
      const { result, seen } = await call(access(BRIDGES, rpc), acmeAdmin, { id: "b9", bridge: { name: "mine" } }, {}, { id: "b9", tenantId: "zeta" });
      expect(await refusal(result), rpc).toEqual(hidden);
      expect(seen.ran).toBe(false);
    }
  });

  it("anything under it (a DHCP subnet created or listed under its bridge) is a 404 naming the bridge", async () => {
    for (const rpc of ["CreateDhcpSubnet", "ListDhcpSubnets"]) {
      const { result, seen } = await call(access(DHCP, rpc), acmeAdmin, { bridgeId: "b9", subnet: {} }, { items: [] }, { id: "b9", tenantId: "zeta" });
      expect(await refusal(result), rpc).toEqual(hidden);
      expect(seen).toEqual({ ran: false, ownerAsked: { id: "b9" } });
    }
  });

  it("a missing bridge's children answer the bridge's own 404", async () => {
    const { result } = await call(access(DHCP, "ListDhcpSubnets"), acmeUser, { bridgeId: "nothing" });
    expect(await refusal(result)).toEqual({ code: status.NOT_FOUND, message: "There is no Bridge with ID nothing." });
  });
});

describe("lists", () => {
  const everyone = { items: [{ id: "1", tenantId: "acme" }, { id: "2", tenantId: "zeta" }, { id: "3" }] };

  it("show a non-admin only its tenant's items, asking the service for its tenant alone", async () => {
    const request: Obj = {};
    const { result } = await call(access(BRIDGES, "ListBridges"), acmeUser, request, everyone);
    expect(await result).toEqual({ items: [{ id: "1", tenantId: "acme" }] });
    expect(request["tenant_id"]).toBe("acme");
  });

  it("answer a filter naming another tenant with an empty list, without asking the service", async () => {
    const { result, seen } = await call(access(BRIDGES, "ListBridges"), acmeAdmin, { tenant_id: "zeta" }, everyone);
    expect(await result).toEqual({ items: [] });
    expect(seen.ran).toBe(false);
  });

  it("show an admin everything", async () => {
    const { result } = await call(access(BRIDGES, "ListBridges"), admin, {}, everyone);
    expect(await result).toEqual(everyone);
  });
});
