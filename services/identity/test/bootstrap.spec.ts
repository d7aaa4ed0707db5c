// The first admin: created at start-up, its generated password printed once (never logged as
// a field), and the service refuses calls without a valid token except the password check.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { clientConstructor, loadGrpc } from "@vnm/kit";
import pg from "pg";
import { afterAll, expect, it } from "vitest";

const DATABASE_URL = process.env["DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test";
const schema = `identity_b${randomBytes(4).toString("hex")}`;
const pkg = loadGrpc();

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}

/** Starts the service, waits for it to answer, and returns its output so far. */
async function start(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; output: () => string; port: number }> {
  const port = await freePort();
  let out = "";
  const child = spawn(process.execPath, [fileURLToPath(new URL("../src/main.ts", import.meta.url))], {
    env: { ...process.env, DATABASE_URL, NATS_URL: "", GRPC_PORT: String(port), VNM_DB_SCHEMA: schema, VNM_TOKEN_SECRET: "s", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const client = new (clientConstructor(pkg, "grpc.health.v1.Health"))(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 20_000, (e) => (e ? reject(e) : resolve())));
  client.close();
  return { child, output: () => out, port };
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });

function call(port: number, service: string, rpc: string, req: unknown): Promise<{ err: grpc.ServiceError | null; res: unknown }> {
  const c = new (clientConstructor(pkg, service))(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    (c as unknown as Record<string, (...a: unknown[]) => void>)[rpc]!.call(c, req, (err: grpc.ServiceError | null, res: unknown) => {
      c.close();
      resolve({ err, res });
    });
  });
}

afterAll(async () => {
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
});

it("generates the first admin's password, prints it once, and it logs in", async () => {
  const first = await start({ VNM_ADMIN_USER: "root", VNM_ADMIN_PASSWORD: "" });
  const m = /Generated password for admin user 'root': (\S+)/.exec(first.output());
  expect(m).not.toBeNull();
  const password = m![1]!;
  // The structured log lines never carry it.
  for (const line of first.output().split("\n").filter((l) => l.startsWith("{"))) expect(line).not.toContain(password);
  const ok = await call(first.port, "vnm.identity.v1.AuthService", "Authenticate", { name: "root", password });
  expect(ok.err).toBeNull();
  expect(ok.res).toMatchObject({ name: "root", roles: ["admin"] });
  const bad = await call(first.port, "vnm.identity.v1.AuthService", "Authenticate", { name: "root", password: "nope" });
  expect(bad.err?.code).toBe(grpc.status.UNAUTHENTICATED);
  await stop(first.child);

  const second = await start({ VNM_ADMIN_USER: "root", VNM_ADMIN_PASSWORD: "" });
  expect(second.output()).not.toContain("Generated password");
  expect((await call(second.port, "vnm.identity.v1.AuthService", "Authenticate", { name: "root", password })).err).toBeNull();
  await stop(second.child);

  // VNM_ADMIN_PASSWORD, when given, becomes the admin's password.
  const third = await start({ VNM_ADMIN_USER: "root", VNM_ADMIN_PASSWORD: "chosen-password" });
  expect((await call(third.port, "vnm.identity.v1.AuthService", "Authenticate", { name: "root", password: "chosen-password" })).err).toBeNull();
  // Users cannot be listed without a token.
  const anon = await call(third.port, "vnm.identity.v1.UserService", "ListUsers", {});
  expect(anon.err?.code).toBe(grpc.status.UNAUTHENTICATED);
  await stop(third.child);
});
