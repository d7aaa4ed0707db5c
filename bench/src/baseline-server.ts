// Baseline servers for `npm run bench`, each run in its own child process so it never shares an
// event loop with the bench. Usage: node baseline-server.ts <mode> <config.json>
//   http          bare node:http returning the recorded body
//   express       bare express returning it
//   echo          a grpc-js Echo service (config.pg: also one indexed Postgres read per call)
//   express-grpc  express making one grpc-js unary call to config.echoAddr per request
// Prints "READY <port>" on stdout once listening.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";

// Loaded untyped: a baseline is the least code that serves the same bytes.
const require = createRequire(import.meta.url);
const express = require("express");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const pg = require("pg");

interface Config {
  body: string;
  contentType: string;
  protoPath: string;
  echoAddr?: string;
  pg?: { databaseUrl: string; schema: string; id: string };
}

const mode = process.argv[2];
const cfg = JSON.parse(readFileSync(process.argv[3]!, "utf8")) as Config;
const body = Buffer.from(cfg.body);

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
  server.listen(0, "127.0.0.1", () => ready((server.address() as { port: number }).port));
}

function serveExpress(): void {
  const app = bareExpress();
  app.get("/bridges/:id", (_req: unknown, res: Res) => sendBody(res));
  listen(app);
}

/** The Echo service; with config.pg, each call first reads the bridge by its primary key, as the bridge service's GetBridge does. */
function serveEcho(): void {
  const Echo = loadEcho();
  const pool = cfg.pg ? new pg.Pool({ connectionString: cfg.pg.databaseUrl, max: 10 }) : undefined;
  const server = new grpc.Server();
  server.addService(Echo.service, {
    Get(call: { request: { id: string } }, cb: (err: Error | null, res?: { body: string }) => void) {
      if (!pool) return cb(null, { body: cfg.body });
      pool
        .query(`SELECT ${COLUMNS} FROM ${cfg.pg!.schema}.bridges WHERE id = $1`, [call.request.id])
        .then((r: { rows: unknown[] }) => (r.rows.length === 1 ? cb(null, { body: cfg.body }) : cb(Object.assign(new Error("not found"), { code: 5 }))))
        .catch((err: Error) => cb(err));
    },
  });
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err: Error | null, port: number) => {
    if (err) throw err;
    ready(port);
  });
}

function serveExpressGrpc(): void {
  const Echo = loadEcho();
  const client = new Echo(`dns:${cfg.echoAddr}`, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  const app = bareExpress();
  app.get("/bridges/:id", (req: { params: { id: string } }, res: Res) => {
    client.Get({ id: req.params.id }, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err: Error | null, r: { body: string }) => {
      if (err) {
        res.statusCode = 500;
        res.end();
        return;
      }
      res.statusCode = 200;
      res.setHeader("Content-Type", cfg.contentType);
      res.setHeader("Content-Length", Buffer.byteLength(r.body));
      res.end(r.body);
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
