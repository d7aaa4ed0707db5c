// The bridge service reached directly over gRPC (no gateway) still validates its input.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { clientConstructor, type Identity, loadGrpc, signToken } from "@vnm/kit";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";

const DATABASE_URL = process.env["DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test";
const schema = `bridge_d${randomBytes(4).toString("hex")}`;
const secret = randomBytes(16).toString("hex");
const exp = Math.floor(Date.now() / 1000) + 600;
const token = (who: Partial<Identity>, key = secret) =>
  signToken({ userId: "u", name: "n", role: "admin", tenantId: null, exp, ...who }, key);
const ADMIN = token({});
let child: ChildProcess;
let client: grpc.Client;

const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const a = s.address();
    s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
  });
});

function call(rpc: string, req: unknown, bearer: string | null = ADMIN): Promise<{ err: grpc.ServiceError | null; res: unknown }> {
  const md = new grpc.Metadata();
  if (bearer !== null) md.set("authorization", `Bearer ${bearer}`);
  return new Promise((resolve) => {
    (client as unknown as Record<string, (...a: unknown[]) => void>)[rpc]!.call(client, req, md, (err: grpc.ServiceError | null, res: unknown) =>
      resolve({ err, res }),
    );
  });
}

beforeAll(async () => {
  child = spawn(process.execPath, [fileURLToPath(new URL("../src/main.ts", import.meta.url))], {
    env: {
      ...process.env,
      DATABASE_URL,
      NATS_URL: "",
      GRPC_PORT: String(port),
      VNM_DB_SCHEMA: schema,
      VNM_TOKEN_SECRET: secret,
      LOG_LEVEL: "error",
    },
    stdio: "inherit",
  });
  const Ctor = clientConstructor(loadGrpc(), "vnm.bridge.v1.BridgeService");
  client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 15_000, (e) => (e ? reject(e) : resolve())));
});

afterAll(async () => {
  child.kill("SIGTERM");
  client.close();
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
});

it("refuses a bad field with INVALID_ARGUMENT and its violations", async () => {
  const { err } = await call("CreateBridge", { bridge: { name: "x".repeat(256), inboundFilterId: "nope" } });
  expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  const violations = JSON.parse(String(err?.metadata.get("vnm-violations")[0]));
  expect(violations.map((v: { property: string }) => v.property).sort()).toEqual(["inboundFilterId", "name"]);
});

it("creates a bridge; an id that is not a UUID is NOT_FOUND", async () => {
  const { err, res } = await call("CreateBridge", { bridge: { name: "direct" } });
  expect(err).toBeNull();
  expect((res as { name: string }).name).toBe("direct");
  expect((await call("GetBridge", { id: "nope" })).err?.code).toBe(grpc.status.NOT_FOUND);
});

it("refuses a call without identity, with a forged or expired token", async () => {
  for (const bearer of [null, "v1.e30.AAAA", token({}, "another-secret"), token({ exp: 1 })]) {
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
