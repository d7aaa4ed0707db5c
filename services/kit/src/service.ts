// Everything a domain service needs around its handlers: config, Postgres schema and
// migrations, the outbox relay, the gRPC server with the standard health service, and a
// graceful shutdown. A service is its migrations, its validation rules and its handlers.
import * as grpc from "@grpc/grpc-js";
import type pg from "pg";
import { bearer, type Identity, tokenVerifier } from "./auth.ts";
import { type Bus, localBus, natsBus } from "./bus.ts";
import { buildCatalog } from "./catalog.ts";
import { type Change, commitWithChanges, OutboxRelay } from "./changes.ts";
import { loadConfig, optional, parsePort } from "./config.ts";
import { assertIdentifier, createPool, type Migration, migrate, OUTBOX_MIGRATION, PG } from "./db.ts";
import { ApiError } from "./errors.ts";
import { createLogger, type Logger } from "./log.ts";
import { clientConstructor, loadGrpc } from "./proto.ts";
import { onShutdown } from "./shutdown.ts";
import { type Access, accessRules, withTenancy } from "./tenancy.ts";

/** Metadata key listing what a call changed, as "<kind>:<event>" pairs, for the gateway's cache. */
export const CHANGED_KINDS_KEY = "vnm-changed-kinds";

export interface CallContext {
  /** "<kind>:<event>" of the changes this call made (filled by Store.tx). */
  readonly changed: Set<string>;
  readonly metadata: grpc.Metadata;
  /** The verified caller; undefined only in public methods. */
  readonly identity?: Identity;
}

// biome-ignore lint/suspicious/noExplicitAny: handlers are typed by each service
export type Handler = (request: any, ctx: CallContext) => Promise<unknown>;
export type Handlers = Record<string, Handler>;

/** Reads and transactional writes on the service's own schema. */
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
   * transaction and announced after the commit.
   */
  async tx<T>(ctx: CallContext, fn: (q: pg.PoolClient, emit: (c: Change) => void) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const changes: Change[] = [];
    try {
      await client.query("BEGIN");
      const result = await fn(client, (c) => changes.push(c));
      await commitWithChanges(client, this.prefix, this.domain, changes);
      for (const c of changes) ctx.changed.add(`${c.kind}:${c.event}`);
      if (changes.length > 0) this.onCommit();
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }
}

export interface ServiceSpec {
  /** Domain name: schema name, subject segment, log name ("bridge"). */
  domain: string;
  migrations: Migration[];
  /** Handlers per full gRPC service name, built once the store exists. */
  services: (store: Store, log: Logger) => Record<string, Handlers>;
  /** Runs after the migrations, before the service answers (seeding, say). */
  onStart?: (store: Store, log: Logger) => Promise<void>;
}

export interface RunningService {
  port: number;
  store: Store;
  relay: OutboxRelay;
  bus: Bus;
  log: Logger;
  stop(): Promise<void>;
}

const DB_DOWN = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "57P01", "57P02", "57P03"]);

/** Maps anything a handler throws onto an ApiError; a lost database is UNAVAILABLE (503). */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const code = (err as { code?: string } | null)?.code;
  const message = (err as Error | null)?.message ?? "";
  if (
    (code && (DB_DOWN.has(code) || code.startsWith("08"))) ||
    /timeout exceeded when trying to connect|Connection terminated|not queryable|terminating connection/.test(message)
  ) {
    return new ApiError(grpc.status.UNAVAILABLE, "The database is unavailable; try again later", [], { cause: err });
  }
  if (code === PG.foreignKeyViolation || code === PG.serializationFailure || code === PG.deadlock) {
    return new ApiError(grpc.status.ABORTED, "A concurrent change got in the way of this request; try again", [], {
      cause: err,
    });
  }
  return ApiError.from(err);
}

interface CallGuard {
  verify: (token: string) => Identity | undefined;
  isPublic: boolean;
  access?: Access;
  readOwner: (service: string, rpc: string, request: Record<string, unknown>, ctx: CallContext) => Promise<Record<string, unknown>>;
}

/** Verifies the caller's token and applies the tenancy rules before the handler runs. */
async function guarded(handler: Handler, request: Record<string, unknown>, ctx: CallContext, g: CallGuard): Promise<unknown> {
  if (g.isPublic) return handler(request, ctx);
  const token = bearer(ctx.metadata.get("authorization")[0]);
  const identity = token ? g.verify(token) : undefined;
  if (!identity) throw ApiError.unauthenticated("A valid token is required");
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

function wrap(name: string, handler: Handler, log: Logger, g: CallGuard): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const ctx: CallContext = { changed: new Set(), metadata: call.metadata };
    guarded(handler, call.request as Record<string, unknown>, ctx, g).then(
      (response) => {
        const trailer = new grpc.Metadata();
        if (ctx.changed.size > 0) trailer.set(CHANGED_KINDS_KEY, [...ctx.changed].join(","));
        callback(null, response, trailer);
      },
      (err: unknown) => {
        const apiErr = toApiError(err);
        if (apiErr.code === grpc.status.INTERNAL || apiErr.code === grpc.status.UNAVAILABLE) {
          log.error("call failed", { method: name, err: apiErr.cause ?? apiErr });
        }
        callback(apiErr.toServiceError() as grpc.ServiceError);
      },
    );
  };
}

export async function runService(spec: ServiceSpec): Promise<RunningService> {
  assertIdentifier(spec.domain);
  const cfg = loadConfig({
    databaseUrl: { env: "DATABASE_URL", description: "Postgres connection URL" },
    natsUrl: { env: "NATS_URL", default: "", parse: optional },
    port: { env: "GRPC_PORT", default: "0", parse: parsePort },
    host: { env: "GRPC_HOST", default: "127.0.0.1" },
    schema: { env: "VNM_DB_SCHEMA", default: spec.domain, parse: assertIdentifier },
    prefix: { env: "VNM_BUS_PREFIX", default: "vnm" },
    tokenSecret: { env: "VNM_TOKEN_SECRET", description: "secret shared with the gateway for signing tokens" },
  });
  const log = createLogger({ service: spec.domain });
  const pool = createPool(cfg.databaseUrl, cfg.schema);
  await migrate(pool, cfg.schema, [OUTBOX_MIGRATION, ...spec.migrations], log);

  const bus = cfg.natsUrl
    ? natsBus({ url: cfg.natsUrl, prefix: cfg.prefix, log, name: `vnm-${spec.domain}` })
    : localBus(cfg.prefix);
  if (!cfg.natsUrl) log.warn("NATS_URL not set: change notifications stay in this process (stand-in bus)");
  const relay = new OutboxRelay(pool, cfg.schema, bus, log);
  const store = new Store(pool, spec.domain, cfg.prefix, () => relay.kick());

  await spec.onStart?.(store, log);
  const pkg = loadGrpc();
  const catalog = buildCatalog();
  const rules = accessRules(catalog);
  const all = spec.services(store, log);
  const verify = tokenVerifier(cfg.tokenSecret);
  const readOwner = async (service: string, rpc: string, req: Record<string, unknown>, ctx: CallContext) => {
    const h = all[service]?.[rpc];
    if (!h) throw new Error(`owner ${service}/${rpc} is not served by this process`);
    return (await h(req, { ...ctx, changed: new Set() })) as Record<string, unknown>;
  };
  const server = new grpc.Server({ "grpc.max_receive_message_length": 4 * 1024 * 1024 });
  for (const [fullName, handlers] of Object.entries(all)) {
    const def = clientConstructor(pkg, fullName).service;
    const impl: grpc.UntypedServiceImplementation = {};
    for (const method of Object.keys(def)) {
      const h = handlers[method];
      if (!h) throw new Error(`${fullName}/${method} has no handler`);
      const key = `${fullName}/${method}`;
      impl[method] = wrap(key, h, log, {
        verify,
        isPublic: catalog.publicMethods.has(key),
        access: rules.get(key),
        readOwner,
      });
    }
    server.addService(def, impl);
  }
  let dbHealthy = { at: 0, ok: false };
  const checkDb = async () => {
    if (Date.now() - dbHealthy.at < 1000) return dbHealthy.ok;
    const ok = await Promise.race([
      pool.query("SELECT 1").then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), 1000).unref()),
    ]);
    dbHealthy = { at: Date.now(), ok };
    return ok;
  };
  server.addService(clientConstructor(pkg, "grpc.health.v1.Health").service, {
    Check: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      checkDb().then((ok) => cb(null, { status: ok ? "SERVING" : "NOT_SERVING" }));
    },
  });

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${cfg.host}:${cfg.port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  relay.start();
  log.info("service ready", { port, schema: cfg.schema, bus: bus.kind });

  const stop = async () => {
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 5_000);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    await relay.stop();
    await relay.flush().catch(() => {});
    await bus.close();
    await pool.end();
    log.info("service stopped");
  };
  onShutdown(stop, log);
  return { port, store, relay, bus, log, stop };
}
