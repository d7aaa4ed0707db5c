// `npm start`: the whole system on one machine.
// - With none of DATABASE_URL, NATS_URL, REDIS_URL (a first run anywhere): the gateway and every
//   service in this one process, each service still behind its own gRPC server on loopback, on
//   an embedded PostgreSQL, with the in-process bus and cache they all share.
// - With any of them given, or `--split`: a process per service and one for the gateway
//   (`--replicas N`: N of each, the gateway's sharing PORT), each replaced whenever it exits;
//   SIGHUP replaces them all one at a time (a rolling restart, see supervisor.ts). An embedded
//   PostgreSQL still stands in when DATABASE_URL is unset.
// Every port but PORT is free-chosen. SIGINT/SIGTERM stop everything (the gateway first, the
// database last) with exit status 0; children started here exit when this process dies.
import { existsSync, readFileSync } from "node:fs";
import { enableCompileCache } from "node:module";
import { createServer } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { addressVariable, credentialEnv, freePort, natsCredentials, ROOT, runtimeEnv, serviceCredentials, serviceDomains } from "@vnm/kit/repo";
import { serviceDatabases } from "./database-roles.ts";
import { embeddedPostgres } from "./postgres.ts";
import { type Part, Supervisor } from "./supervisor.ts";

const say = (msg: string) => process.stdout.write(`[launcher] ${msg}\n`);

/** Stops with one line saying what failed and what to do. */
function fail(msg: string): never {
  process.stderr.write(`[launcher] ${msg}\n`);
  process.exit(1);
}

/** Whether host:port can be listened on now. */
function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/**
 * Each part's client credential, made anew at every start (tokens are signed by the identity
 * service with keys of its own, so nothing here needs to outlive a restart): every part gets
 * only its own VNM_SERVICE_CREDENTIAL, the identity service only their hashes.
 */
function partCredentials(): (part: string) => NodeJS.ProcessEnv {
  const made = serviceCredentials();
  return (part) => credentialEnv(made, part);
}

/**
 * Loopback addresses for every service, for the gateway and for services calling each other:
 * `count` free ones each (a process per address), unless VNM_<DOMAIN>_ADDR names them.
 */
async function serviceAddresses(env: NodeJS.ProcessEnv, count: number): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const d of serviceDomains()) {
    const free: string[] = [];
    for (let i = 0; i < count; i++) free.push(`127.0.0.1:${await freePort()}`);
    out[addressVariable(d)] = env[addressVariable(d)] ?? free.join(",");
  }
  return out;
}

/** What each part gets of its own: a service its database URL (its role), every part but identity its credential. */
interface PartSecrets {
  databases: Record<string, string>;
  credential: (part: string) => NodeJS.ProcessEnv;
}

/** A kernel setting's value, when this system has it. */
const sysctl = (name: string) => (existsSync(`/proc/sys/${name}`) ? readFileSync(`/proc/sys/${name}`, "utf8").trim() : undefined);

/** The ports of an address list ("127.0.0.1:5001,127.0.0.1:5002"). */
const portsOf = (addresses: string) => addresses.split(",").map((a) => a.split(":").pop()!);

const serviceEnv = (env: NodeJS.ProcessEnv, addresses: Record<string, string>, domain: string, secrets: PartSecrets): NodeJS.ProcessEnv => ({
  ...partEnv(env, domain),
  ...addresses,
  DATABASE_URL: secrets.databases[domain],
  ...secrets.credential(domain),
  GRPC_HOST: "127.0.0.1",
  GRPC_PORT: portsOf(addresses[addressVariable(domain)]!)[0],
});

const gatewayEnv = (env: NodeJS.ProcessEnv, addresses: Record<string, string>, secrets: PartSecrets): NodeJS.ProcessEnv => ({
  ...partEnv(env, "gateway"),
  ...addresses,
  ...secrets.credential("gateway"),
});

/**
 * A part's environment: the launcher's without the NATS users' passwords (VNM_NATS_PASSWORD_<USER>,
 * when NATS_URL names a server with users), but with its own user's (VNM_NATS_USER, VNM_NATS_PASSWORD).
 */
function partEnv(env: NodeJS.ProcessEnv, part: string): NodeJS.ProcessEnv {
  const own = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith("VNM_NATS_PASSWORD_")));
  return { ...own, ...natsCredentials(env, part) };
}

/**
 * Everything in this process: the services first, then the gateway that calls them, whose
 * /metrics carries every part's families.
 */
async function runTogether(env: NodeJS.ProcessEnv, addresses: Record<string, string>, secrets: PartSecrets): Promise<void> {
  // The compile cache every process of the system has (runtimeEnv), before the parts are imported.
  const cache = runtimeEnv(env)["NODE_COMPILE_CACHE"];
  if (cache) enableCompileCache(cache);
  const { loadContract, runService } = await import("@vnm/kit");
  // The proto files are read once here, for every part of this process.
  const contract = loadContract();
  const serviceMetrics = [];
  for (const d of serviceDomains()) {
    const { service } = await import(pathToFileURL(join(ROOT, "services", d, "src", "service.ts")).href);
    serviceMetrics.push((await runService(service, { ...serviceEnv(env, addresses, d, secrets), VNM_DB_SCHEMA: d }, { contract, together: true })).metrics);
  }
  const { startGateway } = await import(pathToFileURL(join(ROOT, "gateway", "src", "index.ts")).href);
  await startGateway(gatewayEnv(env, addresses, secrets), { serviceMetrics, contract });
}

/** Waits until the gateway answers (the processes of --split start on their own). */
async function gatewayUp(url: string): Promise<boolean> {
  for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
    if (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.ok, () => false)) return true;
  }
  return false;
}

/**
 * What a person does next, on lines of their own after the start-up logs: the console, the API
 * reference, the generated admin password (first run), how to log in and to stop. On stdout, or
 * on the terminal when stdout goes elsewhere (`npm start > log`: tellPerson).
 */
async function summary(url: string, user: string, notices: string[]): Promise<void> {
  const lines = [
    `[launcher] ready`,
    `  console:   ${url}/`,
    `  API docs:  ${url}/docs`,
    ...notices.map((l) => `  ${l}`),
    `  log in:    curl -s -X POST -u ${user}:<password> ${url}/login`,
    `  stop:      Ctrl-C`,
  ];
  // After the start-up lines still buffered by the loggers of this process; on the terminal
  // when the logs go to a file or a pipe, the log then saying only where it went.
  const { tellPerson, writeOut } = await import("@vnm/kit");
  if (tellPerson(`\n${lines.join("\n")}\n\n`) === "stderr") writeOut(`[launcher] ready at ${url}/ (what to do next, on the terminal)\n`);
}

/** The number after --replicas (1 when absent); anything but a whole number from 1 to 16 is refused. */
function replicasArgument(argv: string[]): number {
  const i = argv.indexOf("--replicas");
  if (i < 0) return 1;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1 || n > 16) fail(`--replicas takes a whole number from 1 to 16, got ${argv[i + 1] ?? "nothing"}`);
  return n;
}

/**
 * Every service, then the gateway, `replicas` processes each. A service's address list holds
 * one spare address for a rolling restart's replacement. The gateway processes share PORT where
 * the system allows it (Linux's SO_REUSEPORT); elsewhere there is one.
 */
function splitParts(env: NodeJS.ProcessEnv, addresses: Record<string, string>, secrets: PartSecrets, replicas: number): Part[] {
  const parts: Part[] = serviceDomains().map((d) => {
    const slots = portsOf(addresses[addressVariable(d)]!);
    return { name: d, script: join("services", d, "src", "main.ts"), env: serviceEnv(env, addresses, d, secrets), replicas: Math.min(replicas, slots.length), slots };
  });
  const sharedPort = process.platform === "linux";
  if (!sharedPort && replicas > 1) say(`one gateway process: ${process.platform} cannot share PORT between processes`);
  if (sharedPort && replicas > 1 && sysctl("net/ipv4/tcp_migrate_req") === "0") {
    say("net.ipv4.tcp_migrate_req is 0: a gateway process that stops resets the connections queued for it; sysctl -w net.ipv4.tcp_migrate_req=1 moves them to another");
  }
  const gateway = { ...gatewayEnv(env, addresses, secrets), VNM_REUSE_PORT: String(sharedPort) };
  parts.push({ name: "gateway", script: join("gateway", "src", "main.ts"), env: gateway, replicas: sharedPort ? replicas : 1 });
  return parts;
}

async function runSplit(env: NodeJS.ProcessEnv, addresses: Record<string, string>, secrets: PartSecrets, replicas: number, stopDatabase?: () => Promise<void>): Promise<void> {
  const supervisor = new Supervisor(say);
  for (const part of splitParts(env, addresses, secrets, replicas)) supervisor.start(part);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: stopping`);
    await supervisor.stop();
    await stopDatabase?.();
    process.exit(0);
  };
  // Repeats are ignored (see the kit's shutdown: Ctrl-C under npm arrives twice).
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGHUP", () => void supervisor.roll());
}

/**
 * The database (the embedded one unless DATABASE_URL names one) and each service's own role
 * and URL there. Only this step holds the administrator's URL: it leaves `env`, each service
 * gets its own (serviceEnv).
 */
async function database(env: NodeJS.ProcessEnv): Promise<{ databases: Record<string, string>; stopDatabase?: () => Promise<void> }> {
  let stopDatabase: (() => Promise<void>) | undefined;
  if (!env["DATABASE_URL"]) {
    const db = await embeddedPostgres().catch((err: Error) => fail(`the embedded PostgreSQL did not start: ${err.message}`));
    env["DATABASE_URL"] = db.url;
    stopDatabase = db.stop;
    say(`data: embedded PostgreSQL, kept in ${db.dataDir} (set DATABASE_URL to use your own)`);
  }
  const databases = await serviceDatabases(env["DATABASE_URL"], serviceDomains()).catch(async (err: Error) => {
    await stopDatabase?.();
    fail(`could not make the services' database roles (DATABASE_URL's user must be able to create roles): ${err.message}`);
  });
  delete env["DATABASE_URL"];
  return { databases, stopDatabase };
}

/** Stops everything when the process that started this one goes (npm killed, say). */
function followParent(): void {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(process.pid, "SIGTERM");
  }, 1_000).unref();
}

async function main(): Promise<void> {
  followParent();
  const env: NodeJS.ProcessEnv = { ...process.env };
  const split = process.argv.includes("--split") || ["DATABASE_URL", "NATS_URL", "REDIS_URL"].some((v) => env[v]);
  const replicas = replicasArgument(process.argv);
  if (!split && replicas > 1) fail("--replicas needs --split (one process per part): npm start -- --split --replicas N");
  const host = env["HOST"] ?? "127.0.0.1";
  const port = Number(env["PORT"] ?? 8080);
  say(split ? "mode: one process per service (--split, or backing services given)" : "mode: everything in this one process");
  if (!(await portFree(port, host))) fail(`port ${port} on ${host} is taken: stop what uses it, or start with PORT=<another port>`);
  const { databases, stopDatabase } = await database(env);
  const secrets: PartSecrets = { databases, credential: partCredentials() };
  if (!env["NATS_URL"]) {
    say(split ? "bus: none shared between processes (set NATS_URL): /events and cross-service reactions need one; tokens' revocation is asked of identity every second" : "bus: in-process, shared by every service (set NATS_URL for NATS JetStream)");
  }
  if (!env["REDIS_URL"]) say("cache: in-process (set REDIS_URL for Redis)");
  // With --split, a spare address per service for the replacement of a rolling restart.
  const addresses = await serviceAddresses(env, split ? replicas + 1 : 1);
  const url = `http://${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host}:${port}`;
  const user = env["VNM_ADMIN_USER"] || "admin";
  if (split) {
    await runSplit(env, addresses, secrets, replicas, stopDatabase);
    if (!(await gatewayUp(url))) say(`the gateway does not answer at ${url} yet; its lines above say why`);
    await summary(url, user, [`restart:   kill -HUP ${process.pid}   (every process, one at a time)`]);
    return;
  }
  const { createLogger, holdNotices, onShutdown, tellPerson } = await import("@vnm/kit");
  // Registered first, so stopped last: after the services that use it.
  if (stopDatabase) onShutdown(stopDatabase, createLogger({ service: "launcher" }));
  // The generated admin password goes into the summary, not among the start-up logs.
  const notices = holdNotices();
  await runTogether(env, addresses, secrets).catch(async (err: Error) => {
    const held = notices();
    if (held.length > 0) tellPerson(`\n${held.join("\n")}\n\n`);
    await stopDatabase?.();
    fail(`could not start: ${err.message}`);
  });
  await summary(url, user, notices());
}

await main();
