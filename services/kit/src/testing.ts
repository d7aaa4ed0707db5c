// Test support shared by the packages' suites: the machine's Postgres/NATS/Redis addresses,
// real processes of this repository, and a service reached directly over gRPC with signed
// tokens. Not used by any running process.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import type { NatsConnection } from "nats";
import pg from "pg";
import { streamNames } from "./bus.ts";
import { type Identity, signToken } from "./auth.ts";
import { clientConstructor, loadGrpc } from "./proto.ts";

import { NODE_FLAGS, ROOT } from "./repo.ts";

export { freePort, ROOT, serviceDomains } from "./repo.ts";
import { freePort } from "./repo.ts";

export const DEPS = {
  databaseUrl: process.env["DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test",
  natsUrl: process.env["NATS_URL"] || "nats://127.0.0.1:4222",
  redisUrl: process.env["REDIS_URL"] || "redis://127.0.0.1:6379",
};

export interface Proc {
  child: ChildProcess;
  /** The last 200 chunks the process printed. */
  output: string[];
  /** Sends `signal` (SIGTERM), then SIGKILL after 5 s; resolves when the process is gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Runs a script of this repository with the project's Node flags (and any `nodeArgs`), or,
 * for an absolute path, that program with `args`.
 */
export function startProcess(script: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = [], args: string[] = []): Proc {
  const [command, argv] = script.startsWith("/") ? [script, args] : [process.execPath, [...NODE_FLAGS, ...nodeArgs, script, ...args]];
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return {
    child,
    output,
    stop: (signal = "SIGTERM") =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const hard = setTimeout(() => child.kill("SIGKILL"), 5_000);
        child.once("exit", () => {
          clearTimeout(hard);
          resolve();
        });
        child.kill(signal);
      }),
  };
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Removes a schema a test's process made in the shared Postgres, and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    await db.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
  } finally {
    await db.end();
  }
}

/** Deletes a deployment's JetStream streams (`streamNames`); gives the names it could not delete, and why. */
export async function deleteStreams(nc: NatsConnection, prefix: string): Promise<string[]> {
  const failed: string[] = [];
  const jsm = await nc.jetstreamManager();
  for (const stream of streamNames(prefix)) await jsm.streams.delete(stream).catch((err: Error) => failed.push(`${stream}: ${err.message}`));
  return failed;
}

export interface Reply {
  err: grpc.ServiceError | null;
  // biome-ignore lint/suspicious/noExplicitAny: replies are inspected freely by tests
  res: any;
}

export interface DirectService {
  schema: string;
  /** host:port of its gRPC server. */
  address: string;
  proc: Proc;
  /** A token signed with the service's secret; `who` overrides the admin defaults. */
  token(who?: Partial<Identity>, secret?: string): string;
  /** Calls `<service>/<rpc>` with the admin token, another token, or none (null). */
  call(service: string, rpc: string, request: unknown, token?: string | null): Promise<Reply>;
  /** The field violations of an INVALID_ARGUMENT reply. */
  violations(r: Reply): { property: string; message: string }[];
  /** Everything the process printed so far. */
  output(): string;
  /** Ends the process; the schema is dropped unless `keepSchema` (to start again on it). */
  stop(opts?: { keepSchema?: boolean }): Promise<void>;
}

/** One gRPC client per service name, made on first use, all to one address. */
function clientsOf(address: string): { clients: Map<string, grpc.Client>; clientOf: (service: string) => grpc.Client } {
  const pkg = loadGrpc();
  const clients = new Map<string, grpc.Client>();
  const clientOf = (service: string) => {
    let c = clients.get(service);
    if (!c) {
      c = new (clientConstructor(pkg, service))(address, grpc.credentials.createInsecure());
      clients.set(service, c);
    }
    return c;
  };
  return { clients, clientOf };
}

/**
 * Starts services/<domain>/src/main.ts (of this repository, or of the copy of another release
 * at `from`) in a schema of its own (or `env.VNM_DB_SCHEMA`), with no NATS, and waits until it
 * answers.
 */
export async function directService(domain: string, env: NodeJS.ProcessEnv = {}, from?: string): Promise<DirectService> {
  const schema = env["VNM_DB_SCHEMA"] ?? `${domain}_d${randomBytes(4).toString("hex")}`;
  const secret = env["VNM_TOKEN_SECRET"] ?? randomBytes(16).toString("hex");
  const port = await freePort();
  const vars = { DATABASE_URL: DEPS.databaseUrl, NATS_URL: "", GRPC_PORT: String(port), VNM_DB_SCHEMA: schema, VNM_TOKEN_SECRET: secret, ...env };
  const script = `services/${domain}/src/main.ts`;
  const proc = from ? startProcess(process.execPath, vars, [], [...NODE_FLAGS, join(from, script)]) : startProcess(script, vars);
  const { clients, clientOf } = clientsOf(`127.0.0.1:${port}`);
  const health = clientOf("grpc.health.v1.Health");
  // Ready when it answers; a process that ends first did not start (its output, complete once its pipes close, says why).
  await new Promise<void>((resolve, reject) => {
    const exited = () => reject(new Error(`${domain} did not start: ${proc.output.join("")}`));
    proc.child.once("close", exited);
    health.waitForReady(Date.now() + 20_000, (e) => {
      proc.child.off("close", exited);
      if (e) exited();
      else resolve();
    });
  });
  const token = (who: Partial<Identity> = {}, key = secret) =>
    signToken({ userId: "u", name: "n", role: "admin", tenantId: null, exp: Math.floor(Date.now() / 1000) + 600, ...who }, key);
  const admin = token();
  return {
    schema,
    address: `127.0.0.1:${port}`,
    proc,
    token,
    call(service, rpc, request, bearer = admin) {
      const client = clientOf(service);
      const md = new grpc.Metadata();
      if (bearer !== null) md.set("authorization", `Bearer ${bearer}`);
      return new Promise((resolve) => {
        (client as unknown as Record<string, (...a: unknown[]) => void>)[rpc]!.call(
          client,
          request,
          md,
          (err: grpc.ServiceError | null, res: unknown) => resolve({ err, res }),
        );
      });
    },
    violations: (r) => JSON.parse(String(r.err?.metadata.get("vnm-violations")[0] ?? "[]")),
    output: () => proc.output.join(""),
    async stop(opts = {}) {
      for (const c of clients.values()) c.close();
      await proc.stop();
      if (!opts.keepSchema) await dropSchema(schema);
    },
  };
}
