// Everything a domain service needs around its handlers: config, Postgres schema and
// migrations, the outbox relay, the gRPC server with the standard health service, and a
// graceful shutdown. A service is its migrations, its validation rules and its handlers.
import * as grpc from "@grpc/grpc-js";
import type pg from "pg";
import { bearer, type Identity, partOf } from "./auth.ts";
import { AUTH_SERVICE, type Authority, type CallerCheck, callerCheck, remoteAuthority } from "./authority.ts";
import { type Bus, localBus, natsBus } from "./bus.ts";
import { type Catalog, EVERY_PART } from "./catalog.ts";
import { type Contract, loadContract } from "./contract.ts";
import { type Change, commitStatements, OutboxRelay, withOutboxRows } from "./changes.ts";
import { reclaimWhenQuiet } from "./memory.ts";
import { loadConfig, optional, parsePort, parsePositiveInt } from "./config.ts";
import { type AnyResource, mergeHandlers, ResourceSet } from "./resource.ts";
import { QUOTA_SERVICE, quotaGuard, USAGE_SERVICE, usageHandler } from "./quota.ts";
import { provisionRole, roleOf } from "./db-roles.ts";
import { assertIdentifier, createPool, inTransaction, type Migration, migrate, OUTBOX_MIGRATION } from "./db.ts";
import { ApiError } from "./errors.ts";
import { createLogger, type Logger } from "./log.ts";
import { Metrics } from "./metrics.ts";
import { type GrpcPackage, PROTO_DIR } from "./proto.ts";
import { addressVariable, CHANGED_KINDS_KEY, createUpstream, DRY_RUN_KEY, FILTERED_KEY, REQUEST_ID_KEY, type Upstream } from "./upstream.ts";
import { announceReady, DEFAULT_DRAIN_MS, onShutdown } from "./shutdown.ts";
import { startTelemetry, traced } from "./telemetry.ts";
import { type Access, accessRules, withTenancy } from "./tenancy.ts";
import { isRecord } from "./values.ts";


export interface CallContext {
  /** "<domain>.<kind>:<event>" of the changes this call made (filled by Store.tx). */
  readonly changed: Set<string>;
  readonly metadata: grpc.Metadata;
  /** The verified caller; in public methods, only when the call carries a valid token. */
  readonly identity?: Identity;
  /** The address the call came from (the gRPC peer). */
  readonly peer?: string;
  /** The request id the gateway passed on (x-request-id), for logs and change notifications. */
  readonly requestId?: string;
  /** What the handler tells the caller beside its answer: that it applied the call's filters. */
  readonly answer?: { filtered: boolean };
}

// biome-ignore lint/suspicious/noExplicitAny: handlers are typed by each service
export type Handler = (request: any, ctx: CallContext) => Promise<unknown>;
export type Handlers = Record<string, Handler>;

/** Reads and transactional writes on the service's own schema. */
/**
 * What a write whose connection was lost while it committed tells its client (503): whether it
 * was applied is not known here. It is never sent again by any part; the client reads before
 * it decides to write again (docs/operations.md, "Losing a host").
 */
export const IN_DOUBT = "The database was lost while this write was committing: it may have been applied; read the item before trying again";

export class Store {
  readonly pool: pg.Pool;
  private readonly domain: string;
  private readonly prefix: string;
  private readonly onCommit: () => void;

  constructor(pool: pg.Pool, domain: string, prefix: string, onCommit: () => void) {
    this.pool = pool;
    this.domain = domain;
    this.prefix = prefix;
    this.onCommit = onCommit;
  }

  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(sql, params);
  }

  /**
   * Runs `fn` in one transaction; the changes it emits are written to the outbox in the same
   * transaction and announced after the commit. `ctx` is the call's, to name the changes to the
   * gateway; work no call asked for (reacting to another service's change) has none. `fn` may
   * end the transaction itself with its last statement (`finish`), once it has emitted every
   * change: that statement, the outbox rows and the COMMIT then go to Postgres in one message;
   * when nothing ran before it and it returns rows, as one named statement of its own (no
   * BEGIN, no COMMIT: a statement alone is a transaction).
   *
   * A dry run (the call carries DRY_RUN_KEY: the API's `?dryRun=All`) runs `fn` whole, every
   * statement and check of it, then rolls back instead of committing (deferred constraints
   * checked first): nothing is stored, no outbox row is written, nothing is announced, and the
   * caller is told of no change (so the gateway's caches stay as they are). `fn` cannot tell.
   */
  async tx<T>(ctx: CallContext | undefined, fn: (q: pg.PoolClient, emit: (c: Change) => void, finish: Finish) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const changes: Change[] = [];
    let finished = false;
    const emit = (c: Change) => {
      if (finished) throw new Error("a change emitted after the transaction was finished");
      changes.push(c);
    };
    const dry = isDryRun(ctx);
    // Set once the statement that commits is on its way: a connection lost from then on leaves
    // the outcome unknown (the commit may have reached the primary and its standby). A dry run
    // commits nothing.
    let committing = false;
    const ending = () => {
      if (dry) return DRY_RUN_END;
      committing = true;
      return commitStatements(client, this.prefix, this.domain, changes, ctx?.requestId);
    };
    const alone = (text: string, values: unknown[]) => () => {
      committing = true;
      return withOutboxRows(text, values, this.prefix, this.domain, changes, ctx?.requestId);
    };
    try {
      const result = await inTransaction(
        client,
        (q, end) =>
          fn(q, emit, (text, values) => {
            finished = true;
            return end.last(text, values, ending, dry ? undefined : alone(text, values));
          }),
        { commit: (q) => q.query(ending()) },
      );
      if (dry) return result;
      for (const c of changes) ctx?.changed.add(`${this.domain}.${c.kind}:${c.event}`);
      if (changes.length > 0) this.onCommit();
      return result;
    } catch (err) {
      if (committing && ApiError.from(err).code === grpc.status.UNAVAILABLE) throw new ApiError(grpc.status.UNAVAILABLE, IN_DOUBT, [], { cause: err });
      throw err;
    } finally {
      client.release();
    }
  }
}

/** Whether a call is a dry run (DRY_RUN_KEY): its writes are rolled back (Store.tx). */
export function isDryRun(ctx: Pick<CallContext, "metadata"> | undefined): boolean {
  return ctx !== undefined && ctx.metadata.get(DRY_RUN_KEY).length > 0;
}

/** How a dry run's transaction ends: the checks a commit would make of deferred constraints, then no commit. */
const DRY_RUN_END = "SET CONSTRAINTS ALL IMMEDIATE; ROLLBACK";

/**
 * Ends a transaction with its last statement (the result returned): the statement, the
 * outbox rows of every change emitted before it and the COMMIT, in one round trip.
 */
export type Finish = (text: string, values: unknown[]) => Promise<pg.QueryResult>;

export interface ServiceSpec {
  /** Domain name: schema name, subject segment, log name ("bridge"). */
  domain: string;
  migrations: Migration[];
  /**
   * The kinds served from their declarations: their RPCs go to the gRPC service the proto
   * names. A kind whose declaration needs the service's context (its hooks call another
   * service, its checks read the service's settings) is given as a function making it.
   */
  resources?: (AnyResource | ((svc: Omit<ServiceContext, "resources">) => AnyResource))[];
  /** Other handlers per full gRPC service name, built once the store exists. */
  services?: (svc: ServiceContext) => Record<string, Handlers>;
  /**
   * Runs after the migrations and once the resources exist, before the service answers:
   * seeding, following other services' changes (`svc.bus.consume`), background work. What it
   * returns, if anything, is run first when the service stops.
   */
  onStart?: (svc: ServiceContext) => Promise<void | (() => Promise<void>)>;
  /**
   * Where keys, the service's own token and users' token generations come from: the identity
   * service over gRPC (with VNM_SERVICE_CREDENTIAL) unless the service is identity itself.
   */
  authority?: (svc: ServiceContext) => Authority;
}

/** What a service's own code gets to work with: its store, log, bus and configuration. */
export interface ServiceContext {
  store: Store;
  log: Logger;
  bus: Bus;
  /** The environment the service was started with (other services' VNM_<DOMAIN>_ADDR). */
  env: NodeJS.ProcessEnv;
  /**
   * Calls another service as this service (an administrator's token of its own), at the
   * address its VNM_<DOMAIN>_ADDR gives; UNAVAILABLE naming it when it is down or not given.
   * The method must name this service among its callers (vnm.api.callers), or the other service
   * refuses the call (PERMISSION_DENIED). `domain` sends it to that domain's address instead of
   * the service's own (a service every domain serves: the quota service's usage count).
   */
  call(service: string, rpc: string, request: unknown, domain?: string): Promise<Record<string, unknown>>;
  /** The service's Prometheus metrics; a service registers families of its own on `metrics.registry`. */
  metrics: Metrics;
  /** The catalog of the proto files the service was started with. */
  catalog: Catalog;
  /** The kinds the service declares, bound to that catalog. */
  resources: ResourceSet;
}

const PEER_TIMEOUT_MS = 5_000;

/** ServiceContext.call: one channel per peer, with the service's own token. */
function peerCaller(env: NodeJS.ProcessEnv, token: () => Promise<string>, contract: Contract): { call: ServiceContext["call"]; upstream(): Upstream; close(): void } {
  let upstream: Upstream | undefined;
  const get = () => (upstream ??= createUpstream(contract.pkg, contract.catalog.services, (d) => env[addressVariable(d)] || undefined));
  const at = new Map<string, Upstream>();
  const close = () => {
    upstream?.close();
    for (const u of at.values()) u.close();
  };
  const to = (service: string, domain: string) => {
    const key = `${domain} ${service}`;
    let u = at.get(key);
    if (!u) {
      u = createUpstream(contract.pkg, [{ name: service, domain }], (d) => env[addressVariable(d)] || undefined);
      at.set(key, u);
    }
    return u;
  };
  const call: ServiceContext["call"] = async (service, rpc, request, domain) =>
    (await (domain ? to(service, domain) : get()).call(service, rpc, request, PEER_TIMEOUT_MS, await token())).response;
  return { call, upstream: get, close };
}

/** The identity service, reached at VNM_IDENTITY_ADDR as this service with its credential. */
function identityAuthority(domain: string, credential: string | undefined, peers: { upstream(): Upstream }): Authority {
  if (!credential) throw new Error(`VNM_SERVICE_CREDENTIAL is not set: the ${domain} service needs its credential to get its token from the identity service`);
  return remoteAuthority(async (rpc, request, token) => (await peers.upstream().call(AUTH_SERVICE, rpc, request, PEER_TIMEOUT_MS, token)).response, domain, credential);
}

export interface RunningService {
  port: number;
  /** The service's metrics (its part of a one-process gateway's /metrics). */
  metrics: Metrics;
  store: Store;
  relay: OutboxRelay;
  bus: Bus;
  log: Logger;
  stop(): Promise<void>;
}

interface CallGuard {
  /** "<service>/<rpc>". */
  method: string;
  /** The caller's token check: `known` answers at once for a token checked before, `verify` otherwise. */
  callers: Pick<CallerCheck, "verify" | "known">;
  isPublic: boolean;
  /** The parts that call the method with their own token (vnm.api.callers). */
  parts: ReadonlySet<string>;
  access?: Access;
  readOwner: (service: string, rpc: string, request: Record<string, unknown>, ctx: CallContext) => Promise<Record<string, unknown>>;
}

/** A part calling as itself may call only the methods that name it among their callers; users are not concerned. */
function refuseUndeclaredPart(identity: Identity, g: CallGuard): void {
  const part = partOf(identity);
  if (part === undefined || g.parts.has(part) || g.parts.has(EVERY_PART)) return;
  throw ApiError.forbidden(`The ${part} part may not call ${g.method} with its own token: the method does not name it among its callers`);
}

/** Verifies the caller's token and applies the tenancy rules before the handler runs. */
async function guarded(handler: Handler, request: Record<string, unknown>, ctx: CallContext, g: CallGuard): Promise<unknown> {
  const token = bearer(ctx.metadata.get("authorization")[0]);
  if (g.isPublic) {
    // A public method still learns who calls when the call carries a valid token.
    const caller = token ? (g.callers.known(token) ?? (await g.callers.verify(token).catch(() => undefined))) : undefined;
    if (caller) refuseUndeclaredPart(caller, g);
    return handler(request, caller ? { ...ctx, identity: caller } : ctx);
  }
  const identity = token ? (g.callers.known(token) ?? (await g.callers.verify(token))) : undefined;
  if (!identity) throw ApiError.unauthenticated("A valid token is required");
  refuseUndeclaredPart(identity, g);
  const withId: CallContext = { ...ctx, identity };
  if (!g.access) {
    // An RPC no HTTP route reaches: administrators only.
    if (identity.role !== "admin") throw ApiError.forbidden("Only administrators may call this");
    return handler(request, withId);
  }
  return withTenancy(
    g.access,
    identity,
    request,
    (service, rpc, req) => g.readOwner(service, rpc, req, withId),
    () => handler(request, withId),
  );
}

/** The request id a call carries, when it is a well-formed one. */
function requestIdOf(metadata: grpc.Metadata): string | undefined {
  const v = metadata.get(REQUEST_ID_KEY)[0];
  return typeof v === "string" && /^[A-Za-z0-9._:-]{1,128}$/.test(v) ? v : undefined;
}

function wrap(name: string, handler: Handler, log: Logger, g: CallGuard, metrics: Metrics): grpc.handleUnaryCall<unknown, unknown> {
  // This method's metric series, looked up once rather than by their labels on every call.
  const duration = metrics.grpcServerDuration.labels({ method: name });
  const succeeded = metrics.grpcServer.labels({ method: name, code: "OK" });
  return (call, callback) => {
    const requestId = requestIdOf(call.metadata);
    const ctx: CallContext = { changed: new Set(), metadata: call.metadata, requestId, peer: call.getPeer(), answer: { filtered: false } };
    const started = performance.now();
    // One line per call, with the request id that led to it, at debug: every call is counted and
    // timed in the metrics, a call failed on the service's side has its error line below, and a
    // line per call cost about as much CPU as the gateway's whole cached read.
    const done = (code: string) => {
      const seconds = (performance.now() - started) / 1000;
      (code === "OK" ? succeeded : metrics.grpcServer.labels({ method: name, code })).inc();
      duration.observe(seconds);
      log.debug("call", { requestId, method: name, code, durationMs: seconds * 1000 });
    };
    // The caller's trace continues here (traceparent in the metadata), when tracing is on.
    traced(name, "server", { "rpc.system": "grpc", "rpc.method": name }, () => guarded(handler, isRecord(call.request) ? call.request : {}, ctx, g), () => call.metadata.getMap()).then(
      (response) => {
        // Trailing metadata only when there is something to say: what the call changed.
        let trailer: grpc.Metadata | undefined;
        if (ctx.changed.size > 0 || ctx.answer?.filtered) {
          trailer = new grpc.Metadata();
          if (ctx.changed.size > 0) trailer.set(CHANGED_KINDS_KEY, [...ctx.changed].join(","));
          if (ctx.answer?.filtered) trailer.set(FILTERED_KEY, "1");
        }
        done("OK");
        callback(null, response, trailer);
      },
      (err: unknown) => {
        const apiErr = ApiError.from(err);
        if (apiErr.code === grpc.status.INTERNAL || apiErr.code === grpc.status.UNAVAILABLE) {
          log.error("call failed", { requestId, method: name, err: apiErr.cause ?? apiErr });
        }
        done(grpc.status[apiErr.code] ?? String(apiErr.code));
        callback(apiErr.toServiceError());
      },
    );
  };
}

/** Every handler of a service: its resources' own RPCs, and the rest it writes itself. */
function handlersOf(spec: ServiceSpec, svc: ServiceContext): Record<string, Handlers> {
  const own = svc.resources.all().map((r) => ({ [r.info.service]: r.handlers(svc.store) }));
  // Every service counts its tenants' items for the quota service, when the contract has quotas.
  const usage: Record<string, Handlers> = svc.catalog.services.some((s) => s.name === USAGE_SERVICE) ? { [USAGE_SERVICE]: { CountUsage: usageHandler(svc.catalog, svc.resources)(svc.store.pool) } } : {};
  return mergeHandlers(...own, usage, spec.services?.(svc) ?? {});
}

/** The service's context, its declared kinds bound to the catalog it was started with. */
function contextOf(spec: ServiceSpec, base: Omit<ServiceContext, "resources">, { pkg, rules }: Contract): ServiceContext {
  const declared = (spec.resources ?? []).map((r) => (typeof r === "function" ? r(base) : r));
  return { ...base, resources: new ResourceSet(base.catalog, declared, pkg, rules) };
}

/**
 * Reads the owner of a request's target through its GET handler: here when this process
 * serves it, else over gRPC from the service that does, with the caller's own token (a parent
 * it may not see answers NOT_FOUND there too; a service that is down answers UNAVAILABLE).
 */
function ownerReader(all: Record<string, Handlers>, pkg: GrpcPackage, catalog: Catalog, env: NodeJS.ProcessEnv): CallGuard["readOwner"] {
  const remote = createUpstream(pkg, catalog.services, (d) => env[addressVariable(d)] || undefined);
  return async (service, rpc, req, ctx) => {
    const h = all[service]?.[rpc];
    if (h) {
      // An answer with no members names no owner: the tenant check then finds none.
      const owner = await h(req, { ...ctx, changed: new Set() });
      return isRecord(owner) ? owner : {};
    }
    const token = bearer(ctx.metadata.get("authorization")[0]);
    return (await remote.call(service, rpc, req, OWNER_TIMEOUT_MS, token, ctx.requestId)).response;
  };
}

const OWNER_TIMEOUT_MS = 5_000;
const NO_PART: ReadonlySet<string> = new Set();

/** The gRPC server with every handler wrapped in the token and tenancy checks. */
function grpcServer(all: Record<string, Handlers>, { pkg, catalog }: Contract, env: NodeJS.ProcessEnv, callers: CallGuard["callers"], log: Logger, metrics: Metrics) {
  const rules = accessRules(catalog);
  const readOwner = ownerReader(all, pkg, catalog, env);
  // No channelz: nothing here reads it, and it counts every call.
  const server = new grpc.Server({ "grpc.max_receive_message_length": 4 * 1024 * 1024, "grpc.enable_channelz": 0 });
  for (const [fullName, handlers] of Object.entries(all)) {
    const def = pkg.service(fullName).service;
    const impl: grpc.UntypedServiceImplementation = {};
    for (const method of Object.keys(def)) {
      const h = handlers[method];
      if (!h) throw new Error(`${fullName}/${method} has no handler`);
      const key = `${fullName}/${method}`;
      const parts = catalog.callers.get(key) ?? NO_PART;
      impl[method] = wrap(key, h, log, { method: key, callers, isPublic: catalog.publicMethods.has(key), parts, access: rules.get(key), readOwner }, metrics);
    }
    server.addService(def, impl);
  }
  return server;
}

/**
 * The standard health service: SERVING while the database answers (checked at most once a
 * second) and until the service starts stopping (`stopServing`), NOT_SERVING after.
 */
function healthService(pool: pg.Pool): { impl: grpc.UntypedServiceImplementation; stopServing(): void } {
  let last = { at: 0, ok: false };
  let stopping = false;
  const checkDb = async () => {
    if (Date.now() - last.at < 1000) return last.ok;
    const ok = await Promise.race([
      pool.query("SELECT 1").then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), 1000).unref()),
    ]);
    last = { at: Date.now(), ok };
    return ok;
  };
  const impl = {
    Check: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      if (stopping) return cb(null, { status: "NOT_SERVING" });
      checkDb().then((ok) => cb(null, { status: ok ? "SERVING" : "NOT_SERVING" }));
    },
  };
  return { impl, stopServing: () => (stopping = true) };
}

/** What the migrations step reads: nothing else is needed to run it. */
function databaseConfig(domain: string, env: NodeJS.ProcessEnv) {
  return loadConfig({
    databaseUrl: { env: "DATABASE_URL", description: "Postgres connection URL (the service's own role)" },
    databaseAdminUrl: { env: "VNM_DATABASE_ADMIN_URL", default: "", parse: optional },
    schema: { env: "VNM_DB_SCHEMA", default: domain, parse: assertIdentifier },
  }, env);
}

/**
 * The service's pool on its schema, brought up to date. Given the administrator's URL (the
 * migrations step), the service's role and schema are made first. With --migrate-only (an init
 * container, a one-shot) the process ends there.
 */
async function openDatabase(spec: ServiceSpec, env: NodeJS.ProcessEnv, log: Logger): Promise<{ pool: pg.Pool; schema: string }> {
  const db = databaseConfig(spec.domain, env);
  if (db.databaseAdminUrl) await provisionRole(db.databaseAdminUrl, db.schema, roleOf(db.databaseUrl));
  const pool = createPool(db.databaseUrl, db.schema);
  await migrate(pool, db.schema, [OUTBOX_MIGRATION, ...spec.migrations], log);
  if (process.argv.includes("--migrate-only")) {
    await pool.end();
    log.info("migrations done");
    process.exit(0);
  }
  return { pool, schema: db.schema };
}

function serviceConfig(env: NodeJS.ProcessEnv) {
  return loadConfig({
    natsUrl: { env: "NATS_URL", default: "", parse: optional },
    natsUser: { env: "VNM_NATS_USER", default: "", parse: optional },
    natsPassword: { env: "VNM_NATS_PASSWORD", default: "", parse: optional },
    port: { env: "GRPC_PORT", default: "0", parse: parsePort },
    host: { env: "GRPC_HOST", default: "127.0.0.1" },
    prefix: { env: "VNM_BUS_PREFIX", default: "vnm" },
    busReplicas: { env: "VNM_BUS_REPLICAS", default: "1", parse: parsePositiveInt },
    serviceCredential: { env: "VNM_SERVICE_CREDENTIAL", default: "", parse: optional },
    metricsPort: { env: "VNM_METRICS_PORT", default: "", parse: optional },
    protoDir: { env: "VNM_PROTO_DIR", default: PROTO_DIR },
    drainMs: { env: "VNM_DRAIN_MS", default: String(DEFAULT_DRAIN_MS), parse: parsePositiveInt },
  }, env);
}

/**
 * Takes no new calls (the listeners close, and every connection is told GOAWAY, so clients send
 * their next calls to another replica) and lets the calls under way finish, for `graceMs` at
 * most; then ends the rest.
 */
function shutDown(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}

/** What a process running several parts hands each service it starts. */
export interface ServiceParts {
  /** The proto files, when the process has loaded them already. */
  contract?: Contract;
  /** Every part of the system runs in this process (the launcher's default), sharing the in-process bus. */
  together?: boolean;
}

/**
 * Starts a service: migrations, the outbox relay, the gRPC server. `env` is its configuration
 * (the process's own by default; the launcher runs several services in one process).
 */
export async function runService(spec: ServiceSpec, env: NodeJS.ProcessEnv = process.env, parts: ServiceParts = {}): Promise<RunningService> {
  assertIdentifier(spec.domain);
  const log = createLogger({ service: spec.domain });
  const stopTelemetry = await startTelemetry(spec.domain, env);
  const { pool, schema } = await openDatabase(spec, env, log);
  const cfg = serviceConfig(env);
  const contract = parts.contract ?? loadContract(cfg.protoDir);
  const bus = cfg.natsUrl ? natsBus({ url: cfg.natsUrl, user: cfg.natsUser, password: cfg.natsPassword, prefix: cfg.prefix, log, name: `vnm-${spec.domain}`, replicas: cfg.busReplicas }) : localBus(cfg.prefix);
  // Alone in its process, a stand-in bus is a fault to warn of; run together, the bus every part shares.
  if (!cfg.natsUrl) (parts.together ? log.debug : log.warn)("NATS_URL not set: change notifications stay in this process (stand-in bus)");
  const relay = new OutboxRelay(pool, schema, bus, log);
  const metrics = new Metrics(spec.domain);
  relay.onFailure = () => metrics.publishFailures.inc();
  metrics.watchOutbox(pool);
  metrics.watchPool(pool);
  // Its own metrics port when VNM_METRICS_PORT names one (0: any free port).
  const metricsServer = cfg.metricsPort === undefined ? undefined : await metrics.serve(Number(cfg.metricsPort), cfg.host);
  const store = new Store(pool, spec.domain, cfg.prefix, () => relay.kick());
  let authority: Authority | undefined;
  const peers = peerCaller(env, () => authority!.serviceToken(), contract);
  const svc = contextOf(spec, { store, log, bus, env, call: peers.call, metrics, catalog: contract.catalog }, contract);
  authority = spec.authority?.(svc) ?? identityAuthority(spec.domain, cfg.serviceCredential, peers);
  // Creates of a tenant's kinds check its quota when a quota service is configured (VNM_QUOTA_ADDR).
  const asksQuotas = Boolean(env[addressVariable("quota")]) && contract.catalog.services.some((s) => s.name === QUOTA_SERVICE);
  svc.resources.quota = quotaGuard(contract.catalog, svc.resources.all().map((r) => r.info.kind), { ask: asksQuotas ? (tenantId) => peers.call(QUOTA_SERVICE, "GetLimits", { tenantId }) : undefined, bus, log });
  const handlers = handlersOf(spec, svc);
  const stopWork = (await spec.onStart?.(svc)) ?? undefined;

  // Identity's changes reach this service on NATS, or on the in-process bus when it is identity.
  const callers = callerCheck(authority, bus, { internal: true, feedReachesIdentity: bus.kind === "nats" || spec.authority !== undefined });
  const server = grpcServer(handlers, contract, env, callers, log, metrics);
  const health = healthService(pool);
  server.addService(contract.pkg.service("grpc.health.v1.Health").service, health.impl);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${cfg.host}:${cfg.port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  relay.start();
  const metricsAddress = metricsServer?.address();
  log.info("service ready", { port, schema, bus: bus.kind, metricsPort: typeof metricsAddress === "object" ? metricsAddress?.port : undefined });
  reclaimWhenQuiet(log);
  announceReady();

  // Health answers NOT_SERVING first (load balancers that check it stop sending), then the
  // server drains within VNM_DRAIN_MS.
  const stop = async () => {
    health.stopServing();
    await stopWork?.();
    await shutDown(server, cfg.drainMs);
    peers.close();
    metricsServer?.close();
    await relay.stop();
    await relay.flush().catch(() => {});
    await bus.close();
    await pool.end();
    await stopTelemetry().catch(() => {});
    log.info("service stopped");
  };
  onShutdown(stop, log, cfg.drainMs);
  return { port, metrics, store, relay, bus, log, stop };
}
