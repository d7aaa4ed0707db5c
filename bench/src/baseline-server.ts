// Baseline servers for `npm run bench`, each run in its own child process so it never shares an
// event loop with the bench. Usage: node baseline-server.ts <mode> <config.json>
//   http          bare node:http returning the recorded body
//   express       bare express returning it
//   echo          a grpc-js Echo service (config.pg: also one indexed Postgres read per call;
//                 config.write: Create inserts a bridge and its outbox row in one transaction)
// The express of every baseline is Express 4 (the package `express4`), as an outside harness
// runs it: the gateway's Express 5 routes a little slower, and a baseline on it would flatter
// the gateway's ratios.
//   express-grpc  express making one grpc-js unary call to config.echoAddr per request (GET
//                 /bridges/:id: Get; POST /bridges: Create, answered 201 with the bridge's JSON)
// Prints "READY <port>" on stdout once listening.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";

// Loaded untyped: a baseline is the least code that serves the same bytes.
const require = createRequire(import.meta.url);
const express = require("express4");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const pg = require("pg");

interface Config {
  body: string;
  /** The bytes to send instead of `body` (base64), with `contentEncoding` (a gzip-coded body). */
  coded?: { base64: string; contentEncoding: string };
  contentType: string;
  protoPath: string;
  echoAddr?: string;
  pg?: { databaseUrl: string; schema: string; id: string };
  /** A schema of the bench's own holding a bridges table like the bridge service's and an outbox. */
  write?: { databaseUrl: string; schema: string };
}

const mode = process.argv[2];
const cfg = JSON.parse(readFileSync(process.argv[3]!, "utf8")) as Config;
const body = cfg.coded ? Buffer.from(cfg.coded.base64, "base64") : Buffer.from(cfg.body);

const COLUMNS =
  "id, tenant_id, name, admin_state_up, inbound_filter_id, outbound_filter_id, inbound_mirror_ids, outbound_mirror_ids, vxlan_port_ids";

const CHANNEL_OPTIONS = {
  "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  "grpc.keepalive_time_ms": 10_000,
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.keepalive_permit_without_calls": 1,
};

function ready(port: number): void {
  process.stdout.write(`READY ${port}\n`);
}

function loadEcho() {
  const def = protoLoader.loadSync(cfg.protoPath, { keepCase: false, longs: String, defaults: true });
  return grpc.loadPackageDefinition(def).bench.Echo;
}

function sendBody(res: import("node:http").ServerResponse): void {
  res.statusCode = 200;
  res.setHeader("Content-Type", cfg.contentType);
  if (cfg.coded) res.setHeader("Content-Encoding", cfg.coded.contentEncoding);
  res.setHeader("Content-Length", body.length);
  res.end(body);
}

type Res = import("node:http").ServerResponse;

/** An express app with nothing the gateway does not do either (no x-powered-by, no entity tags). */
function bareExpress() {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  return app;
}

function listen(app: ReturnType<typeof express>): void {
  const server = app.listen(0, "127.0.0.1", () => ready(server.address().port));
  server.keepAliveTimeout = 60_000;
}

function serveHttp(): void {
  const server = createServer((_req, res) => sendBody(res));
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => {
    const at = server.address();
    if (at === null || typeof at === "string") throw new Error("the baseline server listens on no TCP port");
    ready(at.port);
  });
}

function serveExpress(): void {
  const app = bareExpress();
  app.get("/bridges/:id", (_req: unknown, res: Res) => sendBody(res));
  listen(app);
}

type Callback<T> = (err: Error | null, res?: T) => void;

/** A bridge as the Echo service carries it (proto-loader's camelCase names). */
interface Bridge {
  id: string;
  tenantId: string;
  name: string;
  adminStateUp: boolean;
  inboundFilterId: string;
  outboundFilterId: string;
  inboundMirrorIds: string[];
  outboundMirrorIds: string[];
  vxlanPortIds: string[];
}

/**
 * The obvious durable write of a create: the row and its outbox row, inserted in one transaction
 * (BEGIN, two INSERTs, COMMIT) on a client of a pool of 10.
 */
function createStatements(schema: string): { row: string; outbox: string } {
  return {
    row: `INSERT INTO ${schema}.bridges (id, tenant_id, name, admin_state_up, inbound_filter_id, outbound_filter_id, inbound_mirror_ids, outbound_mirror_ids)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    outbox: `INSERT INTO ${schema}.outbox (subject, payload) VALUES ($1, $2::jsonb)`,
  };
}

/** A row of the bench's bridges table (COLUMNS). */
interface BridgeRow {
  id: string;
  tenant_id: string | null;
  name: string | null;
  admin_state_up: boolean;
  inbound_filter_id: string | null;
  outbound_filter_id: string | null;
  inbound_mirror_ids: string[];
  outbound_mirror_ids: string[];
  vxlan_port_ids: string[];
}

/** A row as the Echo service's Bridge: columns by their camelCase names, NULL as proto3's empty value. */
function asMessage(row: BridgeRow): Bridge {
  return {
    id: row.id,
    tenantId: row.tenant_id ?? "",
    name: row.name ?? "",
    adminStateUp: row.admin_state_up,
    inboundFilterId: row.inbound_filter_id ?? "",
    outboundFilterId: row.outbound_filter_id ?? "",
    inboundMirrorIds: row.inbound_mirror_ids,
    outboundMirrorIds: row.outbound_mirror_ids,
    vxlanPortIds: row.vxlan_port_ids,
  };
}

/** Create: the bridge asked for, under a new id, and its change notification, written together; answers the row. */
function creator(pool: import("pg").Pool, schema: string) {
  const sql = createStatements(schema);
  const orNull = (s: string) => (s === "" ? null : s);
  const write = async (b: Bridge): Promise<BridgeRow> => {
    const id = randomUUID();
    const tenantId = orNull(b.tenantId);
    const payload = JSON.stringify({ kind: "Bridge", event: "created", id, path: `/bridges/${id}`, tenantId, domain: "bench", at: new Date().toISOString() });
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const r = await client.query(sql.row, [id, tenantId, orNull(b.name), b.adminStateUp, orNull(b.inboundFilterId), orNull(b.outboundFilterId), b.inboundMirrorIds, b.outboundMirrorIds]);
      await client.query(sql.outbox, ["bench.bridge.Bridge.created", payload]);
      await client.query("COMMIT");
      return r.rows[0] as BridgeRow;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  };
  return (call: { request: Bridge }, cb: Callback<Bridge>) => {
    write(call.request).then(
      (row) => cb(null, asMessage(row)),
      (err: Error) => cb(err),
    );
  };
}

/**
 * The Echo service; with config.pg, each Get first reads the bridge by its primary key, as the
 * bridge service's GetBridge does; with config.write, Create writes one (see `creator`).
 */
function serveEcho(): void {
  const Echo = loadEcho();
  const db = cfg.pg ?? cfg.write;
  // Named, so its Postgres backends can be told apart from the stack's (and other users').
  const pool = db ? new pg.Pool({ connectionString: db.databaseUrl, max: 10, application_name: `vnm-bench-${mode}` }) : undefined;
  const server = new grpc.Server();
  server.addService(Echo.service, {
    Get(call: { request: { id: string } }, cb: Callback<{ body: string }>) {
      if (!pool || !cfg.pg) return cb(null, { body: cfg.body });
      pool
        .query(`SELECT ${COLUMNS} FROM ${cfg.pg.schema}.bridges WHERE id = $1`, [call.request.id])
        .then((r: { rows: unknown[] }) => (r.rows.length === 1 ? cb(null, { body: cfg.body }) : cb(Object.assign(new Error("not found"), { code: 5 }))))
        .catch((err: Error) => cb(err));
    },
    Create: pool && cfg.write ? creator(pool, cfg.write.schema) : (_call: unknown, cb: Callback<Bridge>) => cb(Object.assign(new Error("no write schema"), { code: 12 })),
  });
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err: Error | null, port: number) => {
    if (err) throw err;
    ready(port);
  });
}

/** A gRPC error as the bare 500 a baseline answers it with. */
function failed(res: Res): void {
  res.statusCode = 500;
  res.end();
}

function serveExpressGrpc(): void {
  const Echo = loadEcho();
  const client = new Echo(`dns:${cfg.echoAddr}`, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  const app = bareExpress();
  const deadline = () => ({ deadline: Date.now() + 10_000 });
  app.get("/bridges/:id", (req: { params: { id: string } }, res: Res) => {
    client.Get({ id: req.params.id }, new grpc.Metadata(), deadline(), (err: Error | null, r: { body: string }) => {
      if (err) return failed(res);
      res.statusCode = 200;
      res.setHeader("Content-Type", cfg.contentType);
      res.setHeader("Content-Length", Buffer.byteLength(r.body));
      res.end(r.body);
    });
  });
  // The obvious durable write: the JSON body parsed, one Create (adminStateUp true unless the
  // body says otherwise, as the API's default), the bridge written back as JSON.
  app.post("/bridges", express.json(), (req: { body: object }, res: Res & { status(n: number): { location(l: string): { json(b: unknown): void } } }) => {
    client.Create({ adminStateUp: true, ...req.body }, new grpc.Metadata(), deadline(), (err: Error | null, b: Bridge) => {
      if (err) return failed(res);
      res.status(201).location(`/bridges/${b.id}`).json(b);
    });
  });
  listen(app);
}

const SERVERS: Record<string, () => void> = { http: serveHttp, express: serveExpress, echo: serveEcho, "express-grpc": serveExpressGrpc };
const serve = SERVERS[mode ?? ""];
if (!serve) {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
serve();

process.on("SIGTERM", () => process.exit(0));
