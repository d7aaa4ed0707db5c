// Starts real processes (services and gateways) against the machine's Postgres, NATS and Redis,
// each test run in its own schema, bus subject prefix and cache prefix.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import pg from "pg";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export const DEPS = {
  databaseUrl: process.env["DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test",
  natsUrl: process.env["NATS_URL"] || "nats://127.0.0.1:4222",
  redisUrl: process.env["REDIS_URL"] || "redis://127.0.0.1:6379",
};

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

export interface Proc {
  child: ChildProcess;
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function startProcess(script: string, env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, [script], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  child.stdout!.on("data", (d: Buffer) => output.push(d.toString()));
  child.stderr!.on("data", (d: Buffer) => output.push(d.toString()));
  return {
    child,
    output,
    stop: (signal = "SIGTERM") =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
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

/** One isolated deployment: its own schema, subject prefix and cache prefix. */
export class Stack {
  readonly id = `t${randomBytes(4).toString("hex")}`;
  readonly procs: Proc[] = [];
  readonly gateways: string[] = [];
  serviceAddr = "";
  private servicePort = 0;
  private service?: Proc;

  get prefix(): string {
    return `vnm${this.id}`;
  }

  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      DATABASE_URL: DEPS.databaseUrl,
      NATS_URL: DEPS.natsUrl,
      REDIS_URL: DEPS.redisUrl,
      VNM_BUS_PREFIX: this.prefix,
      VNM_DB_SCHEMA: `bridge_${this.id}`,
      ...extra,
    };
  }

  async startBridge(): Promise<void> {
    if (!this.servicePort) this.servicePort = await freePort();
    this.serviceAddr = `127.0.0.1:${this.servicePort}`;
    this.service = startProcess("services/bridge/src/main.ts", this.env({ GRPC_PORT: String(this.servicePort) }));
    this.procs.push(this.service);
  }

  async stopBridge(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await this.service?.stop(signal);
  }

  /** Starts a gateway replica and waits until it is ready; returns its base URL. */
  async startGateway(extra: NodeJS.ProcessEnv = {}, waitReady = true): Promise<string> {
    const port = await freePort();
    const proc = startProcess("gateway/src/main.ts", this.env({ PORT: String(port), VNM_BRIDGE_ADDR: this.serviceAddr, ...extra }));
    this.procs.push(proc);
    const base = `http://127.0.0.1:${port}`;
    await waitFor(`gateway ${base}`, async () => {
      const r = await fetch(`${base}/${waitReady ? "readyz" : "healthz"}`);
      return r.status === 200;
    });
    this.gateways.push(base);
    return base;
  }

  async stop(): Promise<void> {
    await Promise.all(this.procs.map((p) => p.stop()));
    const client = new pg.Client({ connectionString: DEPS.databaseUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS bridge_${this.id} CASCADE`);
    await client.end();
  }
}
