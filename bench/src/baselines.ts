// The baselines every ratio is taken against, measured in the same run: bare node:http and
// express returning the bytes of one bridge, express making one grpc-js call, and the design
// floor, express + one grpc-js call + one indexed Postgres read of that bridge.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEPS, type Proc, startProcess, waitFor } from "@vnm/kit/testing";
import type { Baseline, Result, Runner } from "./scenario.ts";
import { TMP, want } from "./settings.ts";
import type { BenchStack } from "./stack.ts";

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
  /** Bare express sending the cached 100-item collection's bytes (when the collection or the baselines run). */
  collBody?: Result;
}

const ECHO_PROTO = `syntax = "proto3";
package bench;
service Echo { rpc Get(Req) returns (Res); }
message Req { string id = 1; }
message Res { string body = 1; }
`;

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

  /** Measures a baseline; with `keep`, its processes stay up for the rows measured in turns with it. */
  async run(name: string, mode: string, opts: { echo?: { pg: boolean }; body?: string; keep?: boolean } = {}): Promise<Baseline> {
    const started: Proc[] = [];
    let echoAddr: string | undefined;
    if (opts.echo) {
      const pg = opts.echo.pg ? { databaseUrl: DEPS.databaseUrl, schema: this.item.schema, id: this.item.id } : undefined;
      const e = await this.start("echo", { pg });
      started.push(e.proc);
      echoAddr = `127.0.0.1:${e.port}`;
    }
    const body = opts.body ?? this.item.body;
    const b = await this.start(mode, { body, echoAddr });
    started.push(b.proc);
    const url = `http://127.0.0.1:${b.port}${this.item.path}`;
    const check = await fetch(url);
    if (check.status !== 200 || (await check.text()) !== body) throw new Error(`baseline ${name} answers ${check.status} with other bytes`);
    const result = await this.runner.scenario(name, "baseline", { url });
    if (!opts.keep) for (const p of started) await this.bench.stopProc(p);
    return { result, load: { url } };
  }

  /** Every baseline (--only leaves out those no row is held to); express and the floor stay up. */
  async all(collectionBody: () => Promise<string>, wantCollection: boolean): Promise<Baselines> {
    if (want("baselines")) await this.run("baseline: node:http", "http");
    const express = await this.run("baseline: express", "express", { keep: true });
    if (want("baselines")) await this.run("baseline: express+grpc", "express-grpc", { echo: { pg: false } });
    const floor = await this.run("baseline: express+grpc+pg (the design floor)", "express-grpc", { echo: { pg: true }, keep: true });
    let collBody: Result | undefined;
    if (want("baselines") || wantCollection) {
      // The very bytes of the cached 100-item collection: what the body's size alone costs.
      const body = await collectionBody();
      collBody = (await this.run(`baseline: express, 100-item body (${body.length} B)`, "express", { body })).result;
    }
    return { express, floor, ...(collBody ? { collBody } : {}) };
  }
}
