// Test support shared by the packages' suites: the machine's Postgres/NATS/Redis addresses,
// real processes of this repository, and a service reached directly over gRPC with signed
// tokens. Not used by any running process.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createPrivateKey, randomBytes, randomUUID, sign as signBytes, type KeyObject } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import type { NatsConnection } from "nats";
import pg from "pg";
import { closeSync, cpSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { streamNames } from "./bus.ts";
import { provisionRole, roleName, serviceDatabaseUrl } from "./db-roles.ts";
import { type Identity, tokenClaims, USER_AUDIENCE } from "./auth.ts";
import { CONTRACT_FILE } from "./descriptors.ts";
import { loadGrpc, PROTO_DIR } from "./proto.ts";

import { NODE_FLAGS, ROOT, runtimeEnv } from "./repo.ts";

export { freePort, ROOT, serviceCredentials, serviceDomains } from "./repo.ts";
import { freePort, natsPasswordVariable, serviceCredentials, serviceDomains } from "./repo.ts";

export const DEPS = {
  databaseUrl: process.env["DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test",
  natsUrl: process.env["NATS_URL"] || "nats://127.0.0.1:4222",
  redisUrl: process.env["REDIS_URL"] || "redis://127.0.0.1:6379",
};

/**
 * A proto directory of the repository's files and `extra` ones (path -> source), with its
 * descriptor set built by buf as `npm run proto` builds the repository's: for a test of a kind
 * the repository does not have. The caller removes it.
 */
export function protoDirWith(extra: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "vnm-proto-"));
  cpSync(PROTO_DIR, dir, { recursive: true });
  for (const [path, source] of Object.entries(extra)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), source);
  }
  writeFileSync(join(dir, CONTRACT_FILE), execFileSync(join(ROOT, "node_modules", ".bin", "buf"), ["build", dir, "-o", "-"], { maxBuffer: 64 << 20 }));
  return dir;
}

export interface Proc {
  child: ChildProcess;
  /** The last 200 chunks the process printed (none when its output goes to a file). */
  output: string[];
  /** Sends `signal` (SIGTERM), then SIGKILL after 5 s; resolves when the process is gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Runs a script of this repository with the project's Node flags (and any `nodeArgs`), or,
 * for an absolute path, that program with `args`. Node runs on jemalloc where the machine has
 * it, with the checkout's compile cache (runtimeEnv), as the launcher runs every process. Its
 * output is kept in `output`, or with `logFile` written to that file (as a launcher's output
 * redirected to a file: nothing in this process reads it line by line).
 */
export function startProcess(script: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = [], args: string[] = [], opts: { logFile?: string } = {}): Proc {
  const [command, argv] = script.startsWith("/") ? [script, args] : [process.execPath, [...NODE_FLAGS, ...nodeArgs, script, ...args]];
  const log = opts.logFile === undefined ? undefined : openSync(opts.logFile, "a");
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { ...process.env, ...(command === process.execPath ? runtimeEnv({ ...process.env, ...env }) : {}), LOG_LEVEL: "warn", ...env },
    stdio: log === undefined ? ["ignore", "pipe", "pipe"] : ["ignore", log, log],
  });
  if (log !== undefined) closeSync(log);
  const output: string[] = [];
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
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

/** Removes a schema a test's process made in the shared Postgres, and everything in it; and its role, when named. */
export async function dropSchema(schema: string, role?: string): Promise<void> {
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    await db.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
    if (role) await db.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`);
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

export interface NatsServer {
  url: string;
  /** Each user's password (deploy/nats.conf names the users), in VNM_NATS_PASSWORD_<USER> variables. */
  passwords: NodeJS.ProcessEnv;
  proc: Proc;
  stop(): Promise<void>;
}

/**
 * A nats-server of its own with deploy/nats.conf's users and permissions: a free port, JetStream
 * in a temporary directory (removed at stop), a random password for every user.
 */
export async function startNatsServer(): Promise<NatsServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "vnm-nats-"));
  const users = ["admin", "gateway", ...serviceDomains()];
  // The server reads each variable as a configuration value: letters then digits stay a string.
  const passwords = Object.fromEntries(users.map((u) => [natsPasswordVariable(u), `p${randomBytes(12).toString("hex")}`]));
  const args = ["-c", join(ROOT, "deploy", "nats.conf"), "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir];
  const proc = startProcess("/usr/sbin/nats-server", passwords, [], args);
  await waitFor("nats-server", async () => proc.output.join("").includes("Server is ready"), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}: ${proc.output.join("")}`);
  });
  const stop = async () => {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `nats://127.0.0.1:${port}`, passwords, proc, stop };
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
  /**
   * A user's token signed with the identity service's current key (or `key`, another Ed25519
   * key); `who` overrides the admin defaults. Its user is one made for the test in identity.
   */
  token(who?: Partial<Identity>, key?: KeyObject): string;
  /** The identity service the service asks for keys and generations. */
  identity: TestIdentity;
  /** Calls `<service>/<rpc>` with the admin token, another token, or none (null), and any other metadata (a gateway's If-Match). */
  call(service: string, rpc: string, request: unknown, token?: string | null, metadata?: Record<string, string>): Promise<Reply>;
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
      c = new (pkg.service(service))(address, grpc.credentials.createInsecure());
      clients.set(service, c);
    }
    return c;
  };
  return { clients, clientOf };
}

/** Ready when it answers; a process that ends first did not start (its output, complete once its pipes close, says why). */
function serving(domain: string, proc: Proc, health: grpc.Client): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const exited = () => reject(new Error(`${domain} did not start: ${proc.output.join("")}`));
    proc.child.once("close", exited);
    health.waitForReady(Date.now() + 20_000, (e) => {
      proc.child.off("close", exited);
      if (e) exited();
      else resolve();
    });
  });
}

export interface TestIdentity {
  schema: string;
  address: string;
  proc?: Proc;
  /** VNM_IDENTITY_ADDR and VNM_SERVICE_CREDENTIAL for the part `name` (one of those it was started for). */
  envFor(name: string): NodeJS.ProcessEnv;
  /** Signs a token with the identity's current key (read from its schema), for a user made for the test. */
  token(who?: Partial<Identity>, key?: KeyObject): string;
}

/** A compact JWS (EdDSA) of `claims`, signed synchronously with node:crypto. */
export function signEdDsa(claims: Record<string, unknown>, key: KeyObject, kid: string): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const input = `${b64({ alg: "EdDSA", typ: "JWT", kid })}.${b64(claims)}`;
  return `${input}.${signBytes(null, Buffer.from(input), key).toString("base64url")}`;
}

/** The identity's current signing key, and a user of its own made for the test (its id and generation). */
async function testSigner(schema: string): Promise<{ key: KeyObject; kid: string; userId: string; gen: number }> {
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    const s = pg.escapeIdentifier(schema);
    const k = (await db.query(`SELECT kid, private_jwk FROM ${s}.signing_keys WHERE signs_from <= now() ORDER BY signs_from DESC LIMIT 1`)).rows[0];
    const userId = randomUUID();
    const u = await db.query(`INSERT INTO ${s}.users (id, name, password_hash, roles) VALUES ($1, $2, 'none', '{admin}') RETURNING token_generation`, [userId, `test-${userId}`]);
    return { key: createPrivateKey({ key: k.private_jwk, format: "jwk" }), kid: k.kid, userId, gen: u.rows[0].token_generation };
  } finally {
    await db.end();
  }
}

/**
 * Signs users' tokens as the identity service whose schema is `schema` would (its current key,
 * read from the schema), for a user made there for the test; `key` signs with another key.
 */
export async function identityTokens(schema: string): Promise<(who?: Partial<Identity>, key?: KeyObject) => string> {
  const signer = await testSigner(schema);
  return (who = {}, key) => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const identity: Identity = { userId: signer.userId, name: "n", role: "admin", tenantId: null, exp, gen: signer.gen, ...who };
    return signEdDsa(tokenClaims(identity, USER_AUDIENCE) as Record<string, unknown>, key ?? signer.key, signer.kid);
  };
}

/** A token signer for tests, over an identity service whose schema and address are known. */
async function testIdentity(schema: string, address: string, credentials: Map<string, string>, proc?: Proc): Promise<TestIdentity> {
  return {
    schema,
    address,
    proc,
    envFor: (name) => ({ VNM_IDENTITY_ADDR: address, VNM_SERVICE_CREDENTIAL: credentials.get(name) ?? "" }),
    token: await identityTokens(schema),
  };
}

/** A process of a domain started on a free port: its gRPC clients, and the role made for it (dropped with its schema). */
interface Answering {
  proc: Proc;
  port: number;
  clients: ReturnType<typeof clientsOf>;
  role: string | undefined;
}

/**
 * Starts a process of `domain` on a free port in schema `env.VNM_DB_SCHEMA` and waits until it
 * answers gRPC health checks. Unless `env` names a DATABASE_URL, it connects as a role of its
 * own that owns the schema (made here, as the migrations step does); what was made for it goes
 * if it does not start, unless `keepSchema` (a schema the test named).
 */
async function startAnswering(domain: string, env: NodeJS.ProcessEnv & { VNM_DB_SCHEMA: string }, keepSchema = false): Promise<Answering> {
  const schema = env.VNM_DB_SCHEMA;
  const role = env["DATABASE_URL"] ? undefined : { role: roleName(DEPS.databaseUrl, schema), password: `p${randomBytes(12).toString("hex")}` };
  if (role) await provisionRole(DEPS.databaseUrl, schema, role);
  const port = await freePort();
  const database = role ? serviceDatabaseUrl(DEPS.databaseUrl, role) : DEPS.databaseUrl;
  const proc = startProcess(`services/${domain}/src/main.ts`, { DATABASE_URL: database, NATS_URL: "", GRPC_PORT: String(port), ...env });
  const clients = clientsOf(`127.0.0.1:${port}`);
  await serving(domain, proc, clients.clientOf("grpc.health.v1.Health")).catch(async (err: Error) => {
    if (!keepSchema) await dropSchema(schema, role?.role);
    throw err;
  });
  return { proc, port, clients, role: role?.role };
}

/**
 * Starts services/<domain>/src/main.ts in a schema of its own (or `env.VNM_DB_SCHEMA`), with no
 * NATS, beside an identity service of its own (unless it is identity), and waits until it
 * answers. `peers` are other parts of the test that get credentials at that identity.
 */
export async function directService(domain: string, env: NodeJS.ProcessEnv = {}, peers: string[] = []): Promise<DirectService> {
  const schema = env["VNM_DB_SCHEMA"] ?? `${domain}_d${randomBytes(4).toString("hex")}`;
  const { credentials, clients: serviceClients } = serviceCredentials([domain, ...peers]);
  let identity: TestIdentity | undefined;
  let identityRole: string | undefined;
  if (domain !== "identity") {
    const idSchema = `identity_d${randomBytes(4).toString("hex")}`;
    const started = await startAnswering("identity", { VNM_DB_SCHEMA: idSchema, VNM_SERVICE_CLIENTS: serviceClients, VNM_PROTO_DIR: env["VNM_PROTO_DIR"] });
    for (const c of started.clients.clients.values()) c.close();
    identity = await testIdentity(idSchema, `127.0.0.1:${started.port}`, credentials, started.proc);
    identityRole = started.role;
  }
  const own = { VNM_SERVICE_CLIENTS: serviceClients, ...identity?.envFor(domain), ...env, VNM_DB_SCHEMA: schema };
  const dropIdentity = async () => {
    if (!identity?.proc) return;
    await identity.proc.stop();
    await dropSchema(identity.schema, identityRole);
  };
  // A service that does not start takes the identity service started for it along.
  const started = await startAnswering(domain, own, env["VNM_DB_SCHEMA"] !== undefined).catch(async (err: Error) => {
    await dropIdentity();
    throw err;
  });
  const { proc, port, role, clients: { clients, clientOf } } = started;
  identity ??= await testIdentity(schema, `127.0.0.1:${port}`, credentials);
  const token = identity.token;
  const admin = token();
  return {
    schema,
    address: `127.0.0.1:${port}`,
    proc,
    token,
    identity,
    call(service, rpc, request, bearer = admin, metadata = {}) {
      const client = clientOf(service);
      const md = new grpc.Metadata();
      if (bearer !== null) md.set("authorization", `Bearer ${bearer}`);
      for (const [k, v] of Object.entries(metadata)) md.set(k, v);
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
      if (!opts.keepSchema) await dropSchema(schema, role);
      await dropIdentity();
    },
  };
}
