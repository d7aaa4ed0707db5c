// The stack under test: every service and a gateway of the test harness's Stack (its own
// schemas, bus prefix and cache prefix, all removed at the end), started from the compiled
// JavaScript or the sources, each process labelled for the CPU and memory figures.
import { readFileSync, writeFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { join } from "node:path";
import { Stack } from "@vnm/e2e/stack";
import { allocatorEnv, NODE_FLAGS } from "@vnm/kit/repo";
import { dropSchema, type Proc, ROOT, serviceDomains, startProcess } from "@vnm/kit/testing";
import { build, linkModules } from "../../deploy/build.ts";
import { CPU_PROF, EXTRA_FLAGS, FROM, LOG_LEVEL, MEM_PROBE, PROF_DIR, TMP } from "./settings.ts";

/** Where the compiled stack is built (BENCH_FROM=compiled). */
const BUILD = join(TMP, "build");
const PROBE = "bench/src/memory-probe.ts";

/** A process of the stack and the name its figures go under. */
export interface Member {
  label: string;
  proc: Proc;
  /** Where its output goes (the stack's processes); a baseline's is kept in `proc.output`. */
  logFile?: string;
}

/** The last `bytes` a member printed. */
export function lastOutput(m: Member, bytes = 2000): string {
  if (!m.logFile) return m.proc.output.join("").slice(-bytes);
  try {
    return readFileSync(m.logFile, "utf8").slice(-bytes);
  } catch {
    return "";
  }
}

/** What ran, for the output: compiled or sources, and the Node flags. */
export const stackDescription = `from ${FROM === "compiled" ? "the compiled JavaScript (deploy/build.ts, as the image; BENCH_FROM=compiled)" : "the TypeScript sources, as npm start runs them (BENCH_FROM=compiled for the image's JavaScript)"} with node ${[...NODE_FLAGS, ...EXTRA_FLAGS].join(" ")}, ${allocator()}`;

/** The allocator every process of the run has (allocatorEnv, or a preload the bench's environment names). */
export function allocator(): string {
  const { LD_PRELOAD: preload, MALLOC_CONF: conf } = { LD_PRELOAD: process.env["LD_PRELOAD"], MALLOC_CONF: process.env["MALLOC_CONF"], ...allocatorEnv() };
  return preload ? `preloading ${preload}${conf ? ` (MALLOC_CONF=${conf})` : ""}` : "on glibc's malloc";
}

/** Node flags for the processes measured closely (the gateways and the bridge service). */
function watchedArgs(): string[] {
  const probe = !MEM_PROBE ? [] : ["--import", FROM === "sources" ? `./${PROBE}` : join(BUILD, "memory-probe.js")];
  return [...probe, ...(CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`] : [])];
}

export class BenchStack {
  /** The bench's running children: the stack's processes and the baselines. */
  readonly members: Member[] = [];
  readonly stack = new Stack(
    // The bench measures the API, not the limiter: one token sends every request. Otherwise the
    // defaults `npm start` has, its log level (info: a line per request) included; each
    // process's output goes to a file of the run (logFile), as a launcher's redirected would.
    { VNM_RATE_LIMIT: "0", LOG_LEVEL },
    (script, env) => this.launch(script, env),
  );
  /** The admin token every request carries, once the first gateway is up. */
  token = "";
  private gatewayLabel = "gateway";
  /** Schemas of the bench's own (the durable-write floor's), dropped at the end. */
  private readonly ownSchemas: string[] = [];

  /** Builds the stack as the image does (deploy/build.ts) when it runs compiled. */
  prepare(): void {
    if (FROM !== "compiled") return;
    build(BUILD, "warn");
    linkModules(BUILD);
    if (MEM_PROBE) writeFileSync(join(BUILD, "memory-probe.js"), stripTypeScriptTypes(readFileSync(join(ROOT, PROBE), "utf8")));
  }

  private launch(script: string, env: NodeJS.ProcessEnv): Proc {
    const domain = /^services\/([^/]+)\//.exec(script)?.[1];
    const label = domain ?? this.gatewayLabel;
    const nodeArgs = [...EXTRA_FLAGS, ...(domain === undefined || domain === "bridge" ? watchedArgs() : [])];
    const logFile = join(TMP, `${label}-${this.members.length}.log`);
    const proc =
      FROM === "sources"
        ? startProcess(script, env, nodeArgs, [], { logFile })
        : startProcess(process.execPath, env, [], [...NODE_FLAGS, ...nodeArgs, join(BUILD, script.replace(/\.ts$/, ".js"))], { logFile });
    this.members.push({ label, proc, logFile });
    return proc;
  }

  /** A child of the bench that is no part of the stack (a baseline server). */
  adopt(label: string, proc: Proc): Proc {
    this.members.push({ label, proc });
    return proc;
  }

  /** Every service, then the first gateway; logs the admin in there. */
  async start(): Promise<{ base: string; gateway: Proc; bridge: Proc }> {
    await this.stack.startServices();
    const { base, proc } = await this.startGateway("gateway");
    this.token = await this.stack.login(base, "admin", this.stack.adminPassword);
    return { base, gateway: proc, bridge: this.proc("bridge") };
  }

  /** Starts one more gateway (the stack's services, `env` on top) and waits until it is ready. */
  async startGateway(label: string, env: NodeJS.ProcessEnv = {}): Promise<{ base: string; proc: Proc }> {
    this.gatewayLabel = label;
    const base = await this.stack.startGateway(env).catch((err: Error) => {
      // What the processes said tells why the stack did not come up.
      const said = this.members.map((m) => `--- ${m.label}${m.proc.child.exitCode === null ? "" : ` (exited ${m.proc.child.exitCode})`}\n${lastOutput(m)}`);
      throw new Error(`${err.message}\n${said.join("\n")}`);
    });
    return { base, proc: this.proc(label) };
  }

  /** The running process of this label (the last one started). */
  proc(label: string): Proc {
    const m = this.members.findLast((x) => x.label === label);
    if (!m) throw new Error(`no ${label} process`);
    return m.proc;
  }

  async stopProc(proc: Proc): Promise<void> {
    const i = this.members.findIndex((m) => m.proc === proc);
    if (i >= 0) this.members.splice(i, 1);
    await proc.stop();
  }

  /** The running children for the CPU figures: the services but the bridge count together. */
  processes(): [string, number | undefined][] {
    const domains = serviceDomains();
    return this.members.map((m) => [m.label !== "bridge" && domains.includes(m.label) ? "other services" : m.label, m.proc.child.pid]);
  }

  /** The services but the bridge, by domain. */
  otherServices(): Member[] {
    return this.members.filter((m) => m.label !== "bridge" && serviceDomains().includes(m.label));
  }

  auth(): Record<string, string> {
    return { "x-auth-token": this.token };
  }

  /** fetch with the admin token. */
  api(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    for (const [k, v] of Object.entries(this.auth())) headers.set(k, v);
    return fetch(url, { ...init, headers });
  }

  /** The bridge service's Prometheus metrics (its VNM_METRICS_PORT). */
  async bridgeMetrics(): Promise<string> {
    return (await fetch(`http://${this.stack.metricsAddrs.get("bridge")}/metrics`)).text();
  }

  /** The name of a schema of the bench's own, `<name>_<stack id>`, dropped by `stop`; the caller makes it. */
  ownSchema(name: string): string {
    const schema = `${name}_${this.stack.id}`;
    this.ownSchemas.push(schema);
    return schema;
  }

  /** Stops every process; the stack's schemas, stream and cache keys go too, and the bench's own schemas. */
  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.proc.stop()));
    this.members.length = 0;
    for (const s of this.ownSchemas.splice(0)) await dropSchema(s);
    await this.stack.stop();
  }
}
