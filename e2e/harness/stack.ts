// One isolated deployment of real processes (services and gateways) against the machine's
// Postgres, NATS and Redis, in its own schemas, bus subject prefix and cache prefix. Free of
// vitest, so tools outside the test runner (the bench) start their stacks with it too; the
// package exports it as @vnm/e2e/stack.
import { randomBytes } from "node:crypto";
import { connect as connectTcp } from "node:net";
import { addressVariable, natsCredentials, natsPasswordVariable, provisionRole, roleName, type ServiceRole, serviceDatabaseUrl, streamNames } from "@vnm/kit";
import { credentialEnv } from "@vnm/kit/repo";
import { DEPS, deleteStreams, freePort, type Proc, serviceCredentials, serviceDomains, startProcess, waitFor } from "@vnm/kit/testing";
import { connect, type NatsConnection, StringCodec } from "nats";
import { Redis } from "ioredis";
import pg from "pg";
import { isRecord, stringMember } from "@vnm/kit/values";

/** Starts one process of the stack: a script of this repository (`gateway/src/main.ts`, `services/<d>/src/main.ts`) with its environment. */
export type Launch = (script: string, env: NodeJS.ProcessEnv) => Proc;

/** How long a stack's processes may take to start. */
const STARTUP_MS = 60_000;

/** One isolated deployment: its own schemas, subject prefix and cache prefix. */
export class Stack {
  readonly id = `t${randomBytes(4).toString("hex")}`;
  readonly procs: Proc[] = [];
  readonly gateways: string[] = [];
  /** gRPC address per domain, fixed for the life of the stack (a restart reuses it). */
  readonly addrs = new Map<string, string>();
  /** Each service's metrics address (its VNM_METRICS_PORT). */
  readonly metricsAddrs = new Map<string, string>();
  /** Each replica's metrics address (startReplica), by its gRPC address. */
  readonly replicaMetrics = new Map<string, string>();
  private readonly services = new Map<string, Proc>();
  /** Each gateway's process and the environment it was started with beyond the stack's, by its base URL. */
  private readonly gatewayProcs = new Map<string, { proc: Proc; extra: NodeJS.ProcessEnv }>();
  private readonly nats: NatsConnection[] = [];

  /** Each part's client credential (VNM_SERVICE_CREDENTIAL), and their hashes for identity. */
  readonly credentials = serviceCredentials();
  /** The NATS this stack's processes use (a test may run its own server to stop and restart). */
  natsUrl = DEPS.natsUrl;
  /**
   * The NATS users' passwords (VNM_NATS_PASSWORD_<USER>) when natsUrl is a server with
   * deploy/nats.conf's users: each process then connects as its own user, the tests as admin.
   */
  natsPasswords: NodeJS.ProcessEnv = {};
  /** Each service's Postgres role (made on its first start, dropped at stop). */
  private readonly roles = new Map<string, ServiceRole>();
  readonly adminPassword = randomBytes(12).toString("hex");
  /** The admin's token from this stack's first gateway (empty until one has started). */
  adminToken = "";
  /** More environment for every process of the stack (LOG_LEVEL, say). */
  readonly extraEnv: NodeJS.ProcessEnv;
  /** How each process starts (from the sources, with the project's Node flags, unless told otherwise). */
  private readonly launch: Launch;

  constructor(extraEnv: NodeJS.ProcessEnv = {}, launch: Launch = startProcess) {
    this.extraEnv = extraEnv;
    this.launch = launch;
  }

  get prefix(): string {
    return `vnm${this.id}`;
  }

  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      DATABASE_URL: DEPS.databaseUrl,
      NATS_URL: this.natsUrl,
      REDIS_URL: DEPS.redisUrl,
      VNM_BUS_PREFIX: this.prefix,
      VNM_ADMIN_USER: "admin",
      VNM_ADMIN_PASSWORD: this.adminPassword,
      // The VTEP tests' devices are OVSDB servers on this machine.
      VNM_VTEP_ALLOWED_NETWORKS: "127.0.0.0/8",
      ...this.extraEnv,
      ...extra,
    };
  }

  /** The part's own credential; identity gets the hashes of every part's. */
  credentialEnv(part: string): NodeJS.ProcessEnv {
    return credentialEnv(this.credentials, part);
  }

  /** Logs in at a gateway; returns the token. */
  async login(base: string, name: string, password: string, project?: string): Promise<string> {
    const headers: Record<string, string> = { authorization: `Basic ${Buffer.from(`${name}:${password}`).toString("base64")}` };
    if (project) headers["x-auth-project"] = project;
    const r = await fetch(`${base}/login`, { method: "POST", headers });
    if (r.status !== 200) throw new Error(`login of ${name} failed: ${r.status} ${await r.text()}`);
    const key = stringMember(await r.json(), "key");
    if (key === undefined) throw new Error(`login of ${name}: the answer carries no key`);
    return key;
  }

  /** The JSON log lines every process of the stack has written so far. */
  logLines(): Record<string, unknown>[] {
    return this.procs
      .flatMap((p) => p.output.join("").split("\n"))
      .filter((l) => l.startsWith("{"))
      .flatMap((l) => {
        const line: unknown = JSON.parse(l);
        return isRecord(line) ? [line] : [];
      });
  }

  schema(domain: string): string {
    return `${domain}_${this.id}`;
  }

  /** Starts one service (every one when no domain is named); addresses stay the same across restarts. */
  async startServices(...domains: string[]): Promise<void> {
    const list = domains.length > 0 ? domains : serviceDomains();
    // Every address first: a service reaches the others at theirs (VNM_<DOMAIN>_ADDR).
    for (const d of list) if (!this.addrs.has(d)) this.addrs.set(d, `127.0.0.1:${await freePort()}`);
    for (const d of list) if (!this.metricsAddrs.has(d)) this.metricsAddrs.set(d, `127.0.0.1:${await freePort()}`);
    // Each service's role and schema at once (one transaction each, under its own lock), then
    // every process: one after another they cost a round of Postgres catalog writes apiece.
    const envs = await Promise.all(list.map((d) => this.serviceEnv(d)));
    list.forEach((d, i) => {
      const port = this.addrs.get(d)!.split(":")[1]!;
      const metricsPort = this.metricsAddrs.get(d)!.split(":")[1]!;
      const proc = this.launch(`services/${d}/src/main.ts`, this.env({ ...this.addressEnv(), ...this.credentialEnv(d), GRPC_PORT: port, VNM_METRICS_PORT: metricsPort, ...envs[i] }));
      this.services.set(d, proc);
      this.procs.push(proc);
    });
  }

  /**
   * Starts one more process of a service (same schema and bus) on a new port and waits until
   * it listens; returns its address, for a gateway's VNM_<DOMAIN>_ADDR list. Its metrics
   * address is in replicaMetrics under that address. `extra` is more environment for it alone.
   */
  async startReplica(domain: string, extra: NodeJS.ProcessEnv = {}): Promise<string> {
    const port = await freePort();
    const addr = `127.0.0.1:${port}`;
    const metricsPort = await freePort();
    this.replicaMetrics.set(addr, `127.0.0.1:${metricsPort}`);
    const env = { ...this.addressEnv(), ...this.credentialEnv(domain), GRPC_PORT: String(port), VNM_METRICS_PORT: String(metricsPort), ...(await this.serviceEnv(domain)), ...extra };
    this.procs.push(this.launch(`services/${domain}/src/main.ts`, this.env(env)));
    await waitFor(`${domain} replica at ${addr}`, () => listening(addr));
    return addr;
  }

  /**
   * Collects every change notification of this stack published on NATS from now on; the
   * subscription and the stack's JetStream stream go at stop().
   */
  async watchChanges(): Promise<ChangeSeen[]> {
    const seen: ChangeSeen[] = [];
    const nc = await this.natsAdmin();
    const sc = StringCodec();
    nc.subscribe(`${this.prefix}.>`, {
      callback: (_e, m) => seen.push({ subject: m.subject, data: JSON.parse(sc.decode(m.data)), requestIdHeader: m.headers?.get("X-Request-Id") || undefined }),
    });
    this.nats.push(nc);
    return seen;
  }

  /**
   * What a service's processes connect with: its own Postgres role (created with its schema, as
   * the migrations step does, on first use) and its own NATS user when the server has users.
   */
  async serviceEnv(domain: string): Promise<NodeJS.ProcessEnv> {
    await provisionRole(DEPS.databaseUrl, this.schema(domain), this.role(domain));
    return { DATABASE_URL: this.databaseUrl(domain), VNM_DB_SCHEMA: this.schema(domain), ...natsCredentials(this.natsPasswords, domain) };
  }

  /** A service's Postgres role: its name and this stack's password for it (dropped at stop, made by whoever runs the migrations step). */
  role(domain: string): ServiceRole {
    let role = this.roles.get(domain);
    if (!role) {
      role = { role: roleName(DEPS.databaseUrl, this.schema(domain)), password: `p${randomBytes(12).toString("hex")}` };
      this.roles.set(domain, role);
    }
    return role;
  }

  /** The DATABASE_URL of a service of this stack: its own role. */
  databaseUrl(domain: string): string {
    return serviceDatabaseUrl(DEPS.databaseUrl, this.role(domain));
  }

  /**
   * Every change notification this stack's JetStream stream holds, oldest first: what was
   * published, whoever was listening at the time (a live subscriber misses what is published
   * while it reconnects).
   */
  async storedChanges(): Promise<ChangeSeen[]> {
    const nc = await this.natsAdmin();
    try {
      const stream = streamNames(this.prefix)[0];
      const { state } = await (await nc.jetstreamManager()).streams.info(stream);
      const stored: ChangeSeen[] = [];
      if (state.messages === 0) return stored;
      const messages = await (await nc.jetstream().consumers.get(stream)).consume();
      for await (const m of messages) {
        stored.push({ subject: m.subject, data: m.json(), requestIdHeader: m.headers?.get("X-Request-Id") || undefined });
        if (m.seq >= state.last_seq) break;
      }
      return stored;
    } finally {
      await nc.close();
    }
  }

  /** A connection to this stack's NATS with every right (as admin on a server with users). */
  natsAdmin(): Promise<NatsConnection> {
    const pass = this.natsPasswords[natsPasswordVariable("admin")];
    return connect({ servers: this.natsUrl, maxReconnectAttempts: -1, reconnectTimeWait: 200, ...(pass ? { user: "admin", pass } : {}) });
  }

  async stopService(domain: string, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await this.services.get(domain)?.stop(signal);
  }

  /** Gateway environment: every service's address. */
  addressEnv(): NodeJS.ProcessEnv {
    return Object.fromEntries([...this.addrs].map(([d, a]) => [addressVariable(d), a]));
  }

  /** A gateway's whole environment on `port`: the stack's, every address, its NATS user and its credential. */
  gatewayEnv(port: number, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return this.env({ PORT: String(port), ...this.addressEnv(), ...natsCredentials(this.natsPasswords, "gateway"), ...this.credentialEnv("gateway"), ...extra });
  }

  /** Starts a gateway replica and waits until it is ready; returns its base URL. */
  async startGateway(extra: NodeJS.ProcessEnv = {}, waitReady = true): Promise<string> {
    const port = await freePort();
    const proc = this.launch("gateway/src/main.ts", this.gatewayEnv(port, extra));
    this.procs.push(proc);
    const base = `http://127.0.0.1:${port}`;
    this.gatewayProcs.set(base, { proc, extra });
    // Every service of a stack starts at once on a machine of two cores: give them room.
    await waitFor(
      `gateway ${base}`,
      async () => {
        const r = await fetch(`${base}/${waitReady ? "readyz" : "healthz"}`);
        // Ready means every service and dependency answers ("ok"), not only some ("degraded").
        return r.status === 200 && (!waitReady || stringMember(await r.json(), "status") === "ok");
      },
      STARTUP_MS,
    );
    this.gateways.push(base);
    // Without waiting for readiness, the identity service may still be starting.
    await waitFor(
      "the admin's login",
      async () => {
        // At this gateway, every time: another stack's earlier login says nothing of whether
        // this one's identity service answers yet.
        const token = await this.login(base, "admin", this.adminPassword);
        this.adminToken ||= token;
        return true;
      },
      STARTUP_MS,
    );
    return base;
  }

  /** Stops the gateway at `base` (a URL startGateway gave). */
  async stopGateway(base: string, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const gateway = this.gatewayProcs.get(base);
    if (!gateway) throw new Error(`no gateway of this stack at ${base}`);
    await gateway.proc.stop(signal);
  }

  /** Starts the stopped gateway at `base` again, on its port and with its environment, and waits until it is ready. */
  async restartGateway(base: string): Promise<void> {
    const gateway = this.gatewayProcs.get(base);
    if (!gateway) throw new Error(`no gateway of this stack at ${base}`);
    const proc = this.launch("gateway/src/main.ts", this.gatewayEnv(Number(new URL(base).port), gateway.extra));
    this.procs.push(proc);
    gateway.proc = proc;
    await waitFor(`gateway ${base} back`, async () => (await fetch(`${base}/readyz`)).status === 200, STARTUP_MS);
  }

  async stop(): Promise<void> {
    await Promise.all(this.procs.map((p) => p.stop()));
    const client = new pg.Client({ connectionString: DEPS.databaseUrl });
    await client.connect();
    // One statement for every schema and one for every role, not one apiece.
    const schemas = [...this.addrs.keys()].map((d) => this.schema(d));
    if (schemas.length > 0) await client.query(`DROP SCHEMA IF EXISTS ${schemas.join(", ")} CASCADE`);
    const roles = [...this.roles.values()].map(({ role }) => role);
    if (roles.length > 0) await client.query(`DROP ROLE IF EXISTS ${roles.join(", ")}`);
    await client.end();
    for (const nc of this.nats.splice(0)) await nc.close();
    // Nothing of the run stays behind: its JetStream stream and its Redis keys go too.
    const nc = await this.natsAdmin();
    await deleteStreams(nc, this.prefix);
    await nc.close();
    const redis = new Redis(DEPS.redisUrl);
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${this.prefix}:*`, "COUNT", 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
    redis.disconnect();
  }
}

export interface ChangeSeen {
  subject: string;
  data: Record<string, unknown>;
  /** The notification's X-Request-Id header, when it has one. */
  requestIdHeader?: string;
}

/** Whether something accepts TCP connections at host:port. */
function listening(addr: string): Promise<boolean> {
  const [host, port] = addr.split(":");
  return new Promise((resolve) => {
    const socket = connectTcp(Number(port), host!);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}


export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are inspected freely
  json: any;
}

/**
 * A small HTTP client bound to a base URL (or taking absolute URLs). Bodies that are not
 * strings or buffers are sent as JSON with `contentType`. With `token` (read at each call, so a
 * token obtained in beforeAll can be named before it exists), every request sends it as
 * `X-Auth-Token` unless the call's headers carry their own `X-Auth-Token` or `Authorization`;
 * without it, a request sends only the headers its call names.
 */
export function httpClient(base: () => string, contentType: string, token?: () => string) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> => {
    const h: Record<string, string> = { ...headers };
    if (token && !Object.keys(h).some((k) => k.toLowerCase() === "x-auth-token" || k.toLowerCase() === "authorization")) {
      const t = token();
      if (!t) throw new Error("the client's token is not there yet");
      h["x-auth-token"] = t;
    }
    let payload: string | Buffer | undefined;
    if (body !== undefined) {
      payload = typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
      h["content-type"] ??= contentType;
    }
    const res = await fetch(path.startsWith("http") ? path : base() + path, { method, headers: h, body: payload });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
}

