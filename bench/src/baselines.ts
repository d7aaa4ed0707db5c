// The baselines every ratio is taken against, measured in the same run, the obvious ones an
// outside harness takes (Express 4, ETag off): bare node:http and express returning the bytes of
// one bridge, express making one grpc-js call, the design floor, express + one grpc-js call + one
// indexed Postgres read of that bridge, and the durable-write floor, express + one grpc-js call +
// one transaction inserting a bridge and its outbox row (a pool of 10), committed with the
// default synchronous_commit.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { OUTBOX_MIGRATION } from "@vnm/kit";
import { DEPS, type Proc, startProcess, waitFor } from "@vnm/kit/testing";
import pg from "pg";
import { migrations as bridgeMigrations } from "../../services/bridge/src/migrations.ts";
import { JSON_TYPE } from "./bridges.ts";
import type { Baseline, Load, Runner } from "./scenario.ts";
import { TMP, want } from "./settings.ts";
import type { BenchStack } from "./stack.ts";
import { isRecord, memberOf } from "@vnm/kit/values";

const SERVER = "bench/src/baseline-server.ts";

/** The item the baselines answer with: its path, bytes and media type, and the bridge service's schema. */
export interface Item {
  path: string;
  id: string;
  body: string;
  contentType: string;
  schema: string;
}

export interface Baselines {
  express: Baseline;
  floor: Baseline;
  /** The durable-write floor (when POST or the baselines run). */
  writeFloor?: Baseline;
  /**
   * Bare express sending the very bytes of the cached 100-item collection's answers (when the
   * collection or the baselines run): the plain JSON, and its gzip coding with
   * `Content-Encoding: gzip` (what a client asking for gzip gets from the gateway).
   */
  collBody?: Baseline;
  collGzip?: Baseline;
}

const ECHO_PROTO = `syntax = "proto3";
package bench;
service Echo {
  rpc Get(Req) returns (Res);
  rpc Create(Bridge) returns (Bridge);
}
message Req { string id = 1; }
message Res { string body = 1; }
message Bridge {
  string id = 1;
  string tenant_id = 2;
  string name = 3;
  bool admin_state_up = 4;
  string inbound_filter_id = 5;
  string outbound_filter_id = 6;
  repeated string inbound_mirror_ids = 7;
  repeated string outbound_mirror_ids = 8;
  repeated string vxlan_port_ids = 9;
}
`;

/** What the durable-write floor is sent: the body the POST row sends. */
export const POST_BODY = JSON.stringify({ name: "b", tenantId: "bench" });

/** What a baseline's Echo server does behind it: answer at once, read the item, or write bridges. */
type EchoWork = { pg: boolean } | { write: true };

/**
 * A schema of the bench's own for the durable-write floor: the bridge service's tables, made by
 * its migrations (the same columns and indexes), and an outbox. The bench drops it at the end.
 */
async function writeSchema(bench: BenchStack): Promise<string> {
  const schema = bench.ownSchema("writefloor");
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    const sql = [OUTBOX_MIGRATION, ...bridgeMigrations].map((m) => m.sql).join(";\n");
    await db.query(`BEGIN; CREATE SCHEMA ${schema}; SET LOCAL search_path = ${schema}; ${sql}; COMMIT`);
  } finally {
    await db.end();
  }
  return schema;
}

/**
 * A baseline's answer before it is measured: the item's very bytes (200), or for a POST a 201
 * with the bridge it was sent, under a new id.
 */
async function checkBaseline(name: string, l: Load, itemBody: string | undefined): Promise<void> {
  const r = await fetch(l.url as string, { method: l.method ?? "GET", headers: l.headers, body: l.body });
  const text = await r.text();
  if (itemBody !== undefined && r.status === 200 && text === itemBody) return;
  if (itemBody === undefined && r.status === 201) {
    const sent: unknown = JSON.parse(l.body ?? "{}");
    const got: unknown = JSON.parse(text);
    if (typeof memberOf(got, "id") === "string" && Object.entries(isRecord(sent) ? sent : {}).every(([k, v]) => memberOf(got, k) === v)) return;
  }
  throw new Error(`baseline ${name} answers ${r.status} with other bytes: ${text.slice(0, 200)}`);
}

export class BaselineRunner {
  private readonly bench: BenchStack;
  private readonly runner: Runner;
  private readonly item: Item;
  private readonly protoPath = join(TMP, "echo.proto");

  constructor(bench: BenchStack, runner: Runner, item: Item) {
    this.bench = bench;
    this.runner = runner;
    this.item = item;
    writeFileSync(this.protoPath, ECHO_PROTO);
  }

  /** Starts a baseline server and returns its port once it prints READY. */
  private async start(mode: string, config: Record<string, unknown>): Promise<{ proc: Proc; port: number }> {
    const file = join(TMP, `${mode}-${randomBytes(3).toString("hex")}.json`);
    writeFileSync(file, JSON.stringify({ body: this.item.body, contentType: this.item.contentType, protoPath: this.protoPath, ...config }));
    const proc = this.bench.adopt(`baseline-${mode}`, startProcess(SERVER, {}, [], [mode, file]));
    let port = 0;
    const ready = async () => {
      port = Number(/READY (\d+)/.exec(proc.output.join(""))?.[1] ?? 0);
      return port > 0;
    };
    await waitFor(`baseline ${mode}`, ready).catch((err: Error) => {
      throw new Error(`${err.message}\n${proc.output.join("")}`);
    });
    return { proc, port };
  }

  /** The Echo server's configuration for `work`. */
  private async echoConfig(work: EchoWork): Promise<Record<string, unknown>> {
    if ("write" in work) return { write: { databaseUrl: DEPS.databaseUrl, schema: await writeSchema(this.bench) } };
    return work.pg ? { pg: { databaseUrl: DEPS.databaseUrl, schema: this.item.schema, id: this.item.id } } : {};
  }

  /**
   * Measures a baseline: the item GET, or with `post` a POST /bridges of that JSON (answered
   * 201); with `keep`, its processes stay up for the rows measured in turns with it.
   */
  async run(name: string, mode: string, opts: { echo?: EchoWork; body?: string; gzipped?: Buffer; keep?: boolean; post?: string } = {}): Promise<Baseline> {
    const started: Proc[] = [];
    let echoAddr: string | undefined;
    if (opts.echo) {
      const e = await this.start("echo", await this.echoConfig(opts.echo));
      started.push(e.proc);
      echoAddr = `127.0.0.1:${e.port}`;
    }
    const body = opts.body ?? this.item.body;
    const coded = opts.gzipped && { base64: opts.gzipped.toString("base64"), contentEncoding: "gzip" };
    const b = await this.start(mode, { body, echoAddr, ...(coded ? { coded } : {}) });
    started.push(b.proc);
    const origin = `http://127.0.0.1:${b.port}`;
    const load = opts.post ? { url: `${origin}/bridges`, method: "POST", headers: JSON_TYPE, body: opts.post } : { url: `${origin}${this.item.path}` };
    await checkBaseline(name, load, opts.post ? undefined : body);
    const result = await this.runner.scenario(name, "baseline", load);
    if (!opts.keep) for (const p of started) await this.bench.stopProc(p);
    return { result, load };
  }

  /** Every baseline (--only leaves out those no row is held to); express and the floor stay up. */
  async all(collectionBody: () => Promise<string>, wantCollection: boolean): Promise<Baselines> {
    if (want("baselines")) await this.run("baseline: node:http", "http");
    const express = await this.run("baseline: express", "express", { keep: true });
    if (want("baselines")) await this.run("baseline: express+grpc", "express-grpc", { echo: { pg: false } });
    const floor = await this.run("baseline: express+grpc+pg (the design floor)", "express-grpc", { echo: { pg: true }, keep: true });
    const writeFloor =
      want("baselines") || want("post")
        ? await this.run("baseline: express+grpc+pg write (the durable-write floor)", "express-grpc", { echo: { write: true }, keep: true, post: POST_BODY })
        : undefined;
    if (!want("baselines") && !wantCollection) return { express, floor, ...(writeFloor ? { writeFloor } : {}) };
    // The very bytes of the cached 100-item collection's answers, plain and gzip-coded: what
    // the bodies alone cost. Both stay up for the collection rows' turns.
    const body = await collectionBody();
    const collBody = await this.run(`baseline: express, 100-item body (${Buffer.byteLength(body)} B)`, "express", { body, keep: true });
    // The gateway codes a kept body at zlib's default level: the same bytes.
    const gzipped = gzipSync(body);
    const collGzip = await this.run(`baseline: express, 100-item body gzip-coded (${gzipped.length} B)`, "express", { body, gzipped, keep: true });
    return { express, floor, ...(writeFloor ? { writeFloor } : {}), collBody, collGzip };
  }
}
