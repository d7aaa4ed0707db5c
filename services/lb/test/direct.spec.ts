// The lb service reached directly over gRPC (no gateway) still validates its input and keeps
// its rules: it trusts nothing the gateway would have checked.
import * as grpc from "@grpc/grpc-js";
import { randomBytes } from "node:crypto";
import { clientConstructor, loadGrpc, signToken } from "@vnm/kit";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEPS, freePort, type Proc, startProcess } from "../../../gateway/test/harness.ts";

const schema = `lb_d${randomBytes(4).toString("hex")}`;
const secret = randomBytes(16).toString("hex");
const exp = Math.floor(Date.now() / 1000) + 600;
const ADMIN = signToken({ userId: "u", name: "n", role: "admin", tenantId: null, exp }, secret);
const TENANT_ADMIN = signToken({ userId: "t", name: "t", role: "tenant_admin", tenantId: "acme", exp }, secret);
const clients: Record<string, grpc.Client> = {};
let proc: Proc;

type Reply = { err: grpc.ServiceError | null; res: Record<string, unknown> };

function call(service: string, rpc: string, req: unknown, token = ADMIN): Promise<Reply> {
  const client = clients[service]!;
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${token}`);
  return new Promise((resolve) => {
    (client as unknown as Record<string, (...a: unknown[]) => void>)[rpc]!.call(client, req, md, (err: grpc.ServiceError | null, res: Record<string, unknown>) =>
      resolve({ err, res }),
    );
  });
}

const violations = (r: Reply) => JSON.parse(String(r.err?.metadata.get("vnm-violations")[0])) as { property: string; message: string }[];

beforeAll(async () => {
  const port = await freePort();
  proc = startProcess("services/lb/src/main.ts", {
    DATABASE_URL: DEPS.databaseUrl,
    NATS_URL: "",
    GRPC_PORT: String(port),
    VNM_DB_SCHEMA: schema,
    VNM_TOKEN_SECRET: secret,
  });
  const pkg = loadGrpc();
  for (const s of ["LoadBalancerService", "PoolService", "HealthMonitorService"]) {
    const Ctor = clientConstructor(pkg, `vnm.lb.v1.${s}`);
    clients[s] = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  }
  const first = clients["PoolService"]!;
  await new Promise<void>((resolve, reject) => first.waitForReady(Date.now() + 15_000, (e) => (e ? reject(e) : resolve())));
});

afterAll(async () => {
  await proc.stop();
  for (const c of Object.values(clients)) c.close();
  const c = new pg.Client({ connectionString: DEPS.databaseUrl });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
});

it("refuses bad pool fields with INVALID_ARGUMENT, naming each field and the allowed value", async () => {
  const r = await call("PoolService", "CreatePool", { pool: { loadBalancerId: "nope", lbMethod: "RANDOM", protocol: "UDP" } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(violations(r)).toEqual([
    { property: "loadBalancerId", message: "must be a UUID" },
    { property: "lbMethod", message: "must be ROUND_ROBIN, the only supported value" },
    { property: "protocol", message: "must be TCP, the only supported value" },
  ]);
});

it("refuses a monitor of another type or with negative timings", async () => {
  const r = await call("HealthMonitorService", "CreateHealthMonitor", { healthMonitor: { type: "HTTP", delay: -1 } });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(violations(r).map((v) => v.property)).toEqual(["type", "delay"]);
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
