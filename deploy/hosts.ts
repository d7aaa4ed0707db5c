// `npm run hosts -- <command>`: three hosts on this machine, each a network namespace of its own
// running the state's engines (a Patroni-managed Postgres with an etcd member, a NATS JetStream
// cluster node, Redis with Sentinel, HAProxy in front of Postgres) and vnm split into a process
// per part, for checks of what losing a host costs (docs/operations.md, "Losing a host").
//
//   up                         makes the topology, waits until every gateway is ready, prints
//                              `host<N> <gateway URL>` per host and `admin <user> <password>`
//   kill <hostN>               SIGKILLs every process of the host
//   isolate <hostN> <seconds>  drops every frame to and from the host for that long, then heals
//   restore <hostN>            starts a killed host's processes again and waits for its gateway
//   status                     the lines `up` printed, and what each engine says of each host
//   down                       removes everything `up` made: processes, namespaces, links, files
//   chaos                      the failover check (deploy/hosts-chaos.ts)
//
// The hosts are vnm-h1..3 (198.18.0.1-3/24, the range kept for such tests), each joined by a veth
// pair to a bridge in a namespace of its own (vnm-sw); this machine's own namespace reaches them
// through one more veth (vnm-hosts0, 198.18.0.254). No namespace has a route anywhere else. What
// separate invocations share is the run directory (VNM_HOSTS_DIR, /tmp/vnm-hosts by default).
// Needs root, iproute2 and nftables, and the engines' Debian packages (the first line of `up`
// says which are missing).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT, serviceDomains } from "@vnm/kit/repo";

export const RUN = process.env["VNM_HOSTS_DIR"] || "/tmp/vnm-hosts";
export const HOSTS = [1, 2, 3] as const;
const SWITCH = "vnm-sw";
const RUNNER_LINK = "vnm-hosts0";
const RUNNER_IP = "198.18.0.254";
const PG_BIN = "/usr/lib/postgresql/15/bin";
/** The Sentinel name of the Redis primary. */
export const REDIS_MASTER = "vnm";
const GATEWAY_PORT = 8080;
/** How long a host's parts may take to come up (every part of three hosts starts on two cores). */
const START_MS = 240_000;

export const hostIp = (n: number) => `198.18.0.${n}`;
export const hostNs = (n: number) => `vnm-h${n}`;
export const gatewayUrl = (n: number) => `http://${hostIp(n)}:${GATEWAY_PORT}`;
const hostDir = (n: number) => join(RUN, `h${n}`);

export interface HostsState {
  adminUser: string;
  adminPassword: string;
  pgPassword: string;
  replicationPassword: string;
}

const say = (msg: string) => process.stderr.write(`[hosts] ${msg}\n`);

function fail(msg: string): never {
  process.stderr.write(`[hosts] ${msg}\n`);
  process.exit(1);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function run(cmd: string, args: string[], opts: { quiet?: boolean; timeout?: number } = {}): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: opts.timeout ?? 30_000 });
  } catch (err) {
    if (opts.quiet) return "";
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(" ")}: ${e.stderr?.trim() || e.message}`);
  }
}

const ipCmd = (...args: string[]) => run("ip", args);

export function readState(): HostsState {
  const file = join(RUN, "state.json");
  if (!existsSync(file)) fail(`no hosts are up (nothing at ${file}): npm run hosts -- up`);
  return JSON.parse(readFileSync(file, "utf8")) as HostsState;
}

/** The host number of "host2" or "2"; anything else stops the command. */
export function hostArgument(raw: string | undefined): number {
  const n = Number(/^(?:host)?([0-9]+)$/.exec(raw ?? "")?.[1]);
  if (!HOSTS.includes(n as 1)) fail(`name a host: host1, host2 or host3 (got ${raw ?? "nothing"})`);
  return n;
}

// ---------------------------------------------------------------- network

function makeNetwork(): void {
  ipCmd("netns", "add", SWITCH);
  ipCmd("-n", SWITCH, "link", "set", "lo", "up");
  ipCmd("-n", SWITCH, "link", "add", "br0", "type", "bridge");
  ipCmd("-n", SWITCH, "link", "set", "br0", "up");
  for (const n of HOSTS) {
    ipCmd("netns", "add", hostNs(n));
    ipCmd("-n", hostNs(n), "link", "set", "lo", "up");
    ipCmd("-n", SWITCH, "link", "add", `h${n}`, "type", "veth", "peer", "name", "eth0", "netns", hostNs(n));
    ipCmd("-n", SWITCH, "link", "set", `h${n}`, "master", "br0", "up");
    ipCmd("-n", hostNs(n), "addr", "add", `${hostIp(n)}/24`, "dev", "eth0");
    ipCmd("-n", hostNs(n), "link", "set", "eth0", "up");
  }
  ipCmd("link", "add", RUNNER_LINK, "type", "veth", "peer", "name", "runner", "netns", SWITCH);
  ipCmd("-n", SWITCH, "link", "set", "runner", "master", "br0", "up");
  ipCmd("addr", "add", `${RUNNER_IP}/24`, "dev", RUNNER_LINK);
  ipCmd("link", "set", RUNNER_LINK, "up");
  // Isolation drops frames at the host's switch port (a table of its own, empty until then): nothing
  // on either side is told, as when a cable or a switch fails.
  run("ip", ["netns", "exec", SWITCH, "nft", "add", "table", "bridge", "vnm"]);
  run("ip", ["netns", "exec", SWITCH, "nft", "add", "chain", "bridge", "vnm", "cut", "{ type filter hook forward priority 0; }"]);
}

function cutHost(n: number, cut: boolean): void {
  const nft = (...args: string[]) => run("ip", ["netns", "exec", SWITCH, "nft", ...args]);
  if (cut) {
    nft("add", "rule", "bridge", "vnm", "cut", "iifname", `h${n}`, "drop");
    nft("add", "rule", "bridge", "vnm", "cut", "oifname", `h${n}`, "drop");
    return;
  }
  const listing = nft("-a", "list", "chain", "bridge", "vnm", "cut");
  for (const m of listing.matchAll(/"h(\d+)" drop # handle (\d+)/g)) if (Number(m[1]) === n) nft("delete", "rule", "bridge", "vnm", "cut", "handle", m[2]!);
}

function removeNetwork(): void {
  for (const name of [...HOSTS.map(hostNs), SWITCH]) run("ip", ["netns", "del", name], { quiet: true });
  run("ip", ["link", "del", RUNNER_LINK], { quiet: true });
}

// ---------------------------------------------------------------- processes

/** Every process whose network is the host's namespace. */
function pidsOf(ns: string): number[] {
  return run("ip", ["netns", "pids", ns], { quiet: true })
    .split("\n")
    .filter(Boolean)
    .map(Number);
}

/** Signals every process of the namespace until none is left (a supervisor may start more meanwhile). */
async function killAll(ns: string, signal: NodeJS.Signals = "SIGKILL", graceMs = 0): Promise<void> {
  if (graceMs > 0) {
    for (const pid of pidsOf(ns)) signalPid(pid, signal);
    for (const until = Date.now() + graceMs; Date.now() < until && pidsOf(ns).length > 0; ) await sleep(200);
  }
  for (let i = 0; i < 50; i++) {
    const pids = pidsOf(ns);
    if (pids.length === 0) return;
    for (const pid of pids) signalPid(pid, "SIGKILL");
    await sleep(100);
  }
  throw new Error(`processes of ${ns} outlived 50 rounds of SIGKILL`);
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

/** Starts `argv` in the host's namespace, detached, its output appended to logs/<name>.log. */
function startIn(n: number, name: string, argv: string[], opts: { user?: string; env?: NodeJS.ProcessEnv } = {}): void {
  const log = openSync(join(hostDir(n), "logs", `${name}.log`), "a");
  const as = opts.user ? ["setpriv", `--reuid=${opts.user}`, `--regid=${opts.user}`, "--init-groups", "--"] : [];
  // A process of another user starts in its host's directory, which that user can enter (up
  // checks it): the checkout's may not let it in (a clone under a 0700 directory, a home), and
  // Patroni's Python then fails to start Postgres (multiprocessing goes back to its start
  // directory), which a host waited out for 240 s.
  const cwd = opts.user ? hostDir(n) : ROOT;
  const child = spawn("ip", ["netns", "exec", hostNs(n), ...as, ...argv], { detached: true, stdio: ["ignore", log, log], env: opts.env ?? process.env, cwd });
  child.unref();
}

// ---------------------------------------------------------------- engines

const others = (n: number) => HOSTS.filter((h) => h !== n);

function writeConfigs(n: number, state: HostsState): void {
  const dir = hostDir(n);
  for (const d of ["logs", "etcd", "nats", "redis", "sentinel"]) mkdirSync(join(dir, d), { recursive: true });
  mkdirSync(join(dir, "pg"), { recursive: true, mode: 0o700 });
  const pgUser = userIds("postgres");
  chownSync(join(dir, "pg"), pgUser.uid, pgUser.gid);
  const ip = hostIp(n);
  // Patroni: Postgres on every host, one primary, synchronous_mode so a commit is on a standby
  // before it is acknowledged (the standby Patroni promotes holds every acknowledged write).
  const patroni = `scope: vnm
name: h${n}
log:
  level: WARNING
restapi:
  listen: ${ip}:8008
  connect_address: ${ip}:8008
etcd3:
  hosts: ${HOSTS.map((h) => `${hostIp(h)}:2379`).join(",")}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      remove_data_directory_on_rewind_failure: true
      remove_data_directory_on_diverged_timelines: true
      parameters:
        max_connections: 300
        shared_buffers: 32MB
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
  initdb:
    - encoding: UTF8
    - auth-local: trust
  pg_hba:
    - local all all trust
    - host replication replicator 198.18.0.0/24 scram-sha-256
    - host all all 198.18.0.0/24 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
postgresql:
  listen: ${ip}:5432
  connect_address: ${ip}:5432
  data_dir: ${join(dir, "pg", "data")}
  bin_dir: ${PG_BIN}
  pgpass: ${join(dir, "pg", "pgpass")}
  authentication:
    superuser:
      username: postgres
      password: ${state.pgPassword}
    replication:
      username: replicator
      password: ${state.replicationPassword}
  parameters:
    unix_socket_directories: ${join(dir, "pg")}
`;
  writeFileSync(join(dir, "patroni.yml"), patroni, { mode: 0o644 });
  // HAProxy: the services' one database address (127.0.0.1:5000), always the primary, found by
  // Patroni's /primary; connections to a server marked down are cut so clients reconnect.
  const haproxy = `global
  maxconn 1000
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen postgres
  bind 127.0.0.1:5000
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
${HOSTS.map((h) => `  server h${h} ${hostIp(h)}:5432 check port 8008`).join("\n")}
`;
  writeFileSync(join(dir, "haproxy.cfg"), haproxy);
  const nats = `server_name: h${n}
listen: 0.0.0.0:4222
http: ${ip}:8222
jetstream {
  store_dir: "${join(dir, "nats")}"
  max_memory_store: 64MB
  max_file_store: 1GB
}
cluster {
  name: vnm
  listen: ${ip}:6222
  routes: [${HOSTS.map((h) => `nats://${hostIp(h)}:6222`).join(", ")}]
}
`;
  writeFileSync(join(dir, "nats.conf"), nats);
  // Sentinel rewrites this file as it learns; only `up` writes it.
  const sentinel = `port 26379
bind 0.0.0.0
protected-mode no
dir ${join(dir, "sentinel")}
sentinel announce-ip ${ip}
sentinel monitor ${REDIS_MASTER} ${hostIp(1)} 6379 2
sentinel down-after-milliseconds ${REDIS_MASTER} 2000
sentinel failover-timeout ${REDIS_MASTER} 10000
sentinel parallel-syncs ${REDIS_MASTER} 1
`;
  writeFileSync(join(dir, "sentinel.conf"), sentinel);
}

function userIds(name: string): { uid: number; gid: number } {
  return { uid: Number(run("id", ["-u", name])), gid: Number(run("id", ["-g", name])) };
}

function startEtcd(n: number): void {
  const ip = hostIp(n);
  startIn(n, "etcd", [
    "etcd",
    `--name=h${n}`,
    `--data-dir=${join(hostDir(n), "etcd")}`,
    `--listen-client-urls=http://${ip}:2379,http://127.0.0.1:2379`,
    `--advertise-client-urls=http://${ip}:2379`,
    `--listen-peer-urls=http://${ip}:2380`,
    `--initial-advertise-peer-urls=http://${ip}:2380`,
    `--initial-cluster=${HOSTS.map((h) => `h${h}=http://${hostIp(h)}:2380`).join(",")}`,
    "--initial-cluster-state=new",
    "--initial-cluster-token=vnm-hosts",
    "--heartbeat-interval=100",
    "--election-timeout=1000",
    "--log-level=warn",
  ]);
}

function startPatroni(n: number): void {
  startIn(n, "patroni", ["patroni", join(hostDir(n), "patroni.yml")], { user: "postgres" });
}

function startHaproxy(n: number): void {
  startIn(n, "haproxy", ["haproxy", "-db", "-f", join(hostDir(n), "haproxy.cfg")]);
}

function startNats(n: number): void {
  startIn(n, "nats", ["nats-server", "-c", join(hostDir(n), "nats.conf")]);
}

/** Redis as a replica of `primary`, or the primary when that is this host. A cache: nothing on disk. */
function startRedis(n: number, primary: string): void {
  const args = ["redis-server", "--bind", "0.0.0.0", "--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", join(hostDir(n), "redis"), "--replica-announce-ip", hostIp(n)];
  if (primary !== hostIp(n)) args.push("--replicaof", primary, "6379");
  startIn(n, "redis", args);
}

function startSentinel(n: number): void {
  startIn(n, "sentinel", ["redis-sentinel", join(hostDir(n), "sentinel.conf")]);
}

/** The environment of a host's vnm launcher: every engine through what runs on this host. */
function vnmEnv(n: number, state: HostsState): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(DATABASE_URL|NATS_URL|REDIS_URL|VNM_|PORT$|HOST$)/.test(k)) env[k] = v;
  const ips = [hostIp(n), ...others(n).map(hostIp)];
  return {
    ...env,
    DATABASE_URL: `postgres://postgres:${state.pgPassword}@127.0.0.1:5000/postgres`,
    NATS_URL: ips.map((ip) => `nats://${ip}:4222`).join(","),
    REDIS_URL: `redis-sentinel://${ips.map((ip) => `${ip}:26379`).join(",")}/${REDIS_MASTER}`,
    VNM_BUS_REPLICAS: "3",
    VNM_ADMIN_USER: state.adminUser,
    VNM_ADMIN_PASSWORD: state.adminPassword,
    HOST: "0.0.0.0",
    PORT: String(GATEWAY_PORT),
    LOG_LEVEL: process.env["LOG_LEVEL"] || "warn",
  };
}

/**
 * The launcher under a shell that waits for it: the launcher stops when its parent goes, and the
 * parent must outlive this command.
 */
export function startVnm(n: number, state: HostsState): void {
  const node = process.execPath;
  // Started again when it fails (its first step, the database roles, fails while Postgres fails over).
  startIn(n, "vnm", ["sh", "-c", `until "${node}" deploy/launcher.ts --split --replicas 1; do sleep 2; done`], { env: vnmEnv(n, state) });
}

// ---------------------------------------------------------------- waiting

async function waitUntil(what: string, ok: () => Promise<boolean> | boolean, ms = START_MS): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await Promise.resolve(ok()).catch(() => false)) return;
    await sleep(500);
  }
  throw new Error(`${what}: not within ${ms / 1000} s (logs in ${RUN}/h*/logs)`);
}

const httpOk = (url: string) => fetch(url, { signal: AbortSignal.timeout(1_500) }).then((r) => r.ok, () => false);

/** The host whose Postgres Patroni says is the primary now, if any answers. */
export async function pgPrimary(): Promise<number | undefined> {
  for (const n of HOSTS) if (await httpOk(`http://${hostIp(n)}:8008/primary`)) return n;
  return undefined;
}

/** The Redis primary's address as a Sentinel of a live host says. */
export function redisPrimary(exclude: number[] = []): string | undefined {
  for (const n of HOSTS.filter((h) => !exclude.includes(h))) {
    const out = run("redis-cli", ["-h", hostIp(n), "-p", "26379", "sentinel", "get-master-addr-by-name", REDIS_MASTER], { quiet: true, timeout: 2_000 }).trim();
    const ip = out.split("\n")[0];
    if (ip && /^198\.18\.0\.\d+$/.test(ip)) return ip;
  }
  return undefined;
}

async function gatewayReady(n: number): Promise<boolean> {
  const r = await fetch(`${gatewayUrl(n)}/readyz`, { signal: AbortSignal.timeout(2_000) });
  return r.status === 200 && ((await r.json()) as { status?: string }).status === "ok";
}

async function canLogIn(n: number, state: HostsState): Promise<boolean> {
  const auth = Buffer.from(`${state.adminUser}:${state.adminPassword}`).toString("base64");
  const r = await fetch(`${gatewayUrl(n)}/login`, { method: "POST", headers: { authorization: `Basic ${auth}` }, signal: AbortSignal.timeout(5_000) });
  return r.status === 200;
}

/**
 * Waits until the host's gateway is ready and its Postgres follows the primary again: a standby
 * that came back may be rewound or copied afresh first, and until it streams it cannot take over.
 */
export async function waitHostReady(n: number, state: HostsState, ms = START_MS): Promise<void> {
  await waitUntil(`host${n}'s gateway ready`, () => gatewayReady(n), ms);
  await waitUntil(`the admin's login at host${n}`, () => canLogIn(n, state), ms);
  await waitUntil(`host${n}'s Postgres streaming`, async () => (await httpOk(`http://${hostIp(n)}:8008/replica`)) || (await httpOk(`http://${hostIp(n)}:8008/primary`)), ms);
  await waitUntil("a synchronous standby", async () => (await Promise.all(HOSTS.map((h) => httpOk(`http://${hostIp(h)}:8008/sync`)))).some(Boolean), ms);
}

// ---------------------------------------------------------------- commands

function preflight(): void {
  if (process.getuid?.() !== 0) fail("needs root (network namespaces): run as root");
  const missing = ["ip", "nft", "etcd", "patroni", "haproxy", "redis-server", "redis-sentinel", "redis-cli", "nats-server", "setpriv"].filter((c) => run("sh", ["-c", `command -v ${c}`], { quiet: true }).trim() === "");
  if (!existsSync(join(PG_BIN, "postgres"))) missing.push(`${PG_BIN}/postgres`);
  if (missing.length > 0) fail(`missing: ${missing.join(", ")} (Debian: apt-get install patroni etcd-server haproxy redis-server redis-sentinel nftables postgresql-15; nats-server from nats.io)`);
  run("ip", ["netns", "list"]);
}

async function up(): Promise<void> {
  preflight();
  if (existsSync(join(RUN, "state.json")) || run("ip", ["netns", "list"]).includes(SWITCH)) fail(`hosts are up already (or left behind): npm run hosts -- down`);
  const t0 = Date.now();
  mkdirSync(RUN, { recursive: true, mode: 0o755 });
  const secret = () => randomBytes(12).toString("hex");
  const state: HostsState = { adminUser: "admin", adminPassword: secret(), pgPassword: secret(), replicationPassword: secret() };
  writeFileSync(join(RUN, "state.json"), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  try {
    makeNetwork();
    for (const n of HOSTS) writeConfigs(n, state);
    // Postgres (and Patroni) run as the postgres user: every directory above RUN must let it through.
    if (spawnSync("setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", "test", "-r", join(hostDir(1), "patroni.yml")]).status !== 0) {
      throw new Error(`the postgres user cannot read ${RUN}: give its parent directories o+x, or set VNM_HOSTS_DIR elsewhere`);
    }
    // The proto bindings and the console, once, as `npm start` would before its launcher.
    run(process.execPath, ["deploy/proto.ts"], { timeout: 120_000 });
    run(process.execPath, ["console/ensure-built.ts"], { timeout: 300_000 });
    for (const n of HOSTS) startEtcd(n);
    await waitUntil("etcd", async () => (await Promise.all(HOSTS.map((n) => httpOk(`http://${hostIp(n)}:2379/health`)))).every(Boolean));
    say(`etcd: 3 members (${s(t0)})`);
    startPatroni(1);
    await waitUntil("Postgres primary on host1", () => httpOk(`http://${hostIp(1)}:8008/primary`));
    for (const n of others(1)) startPatroni(n);
    for (const n of HOSTS) {
      startHaproxy(n);
      startNats(n);
      startRedis(n, hostIp(1));
      startSentinel(n);
    }
    await waitUntil("Postgres standbys", async () => (await Promise.all(others(1).map((n) => httpOk(`http://${hostIp(n)}:8008/replica`)))).every(Boolean));
    await waitUntil("a synchronous standby", async () => (await Promise.all(others(1).map((n) => httpOk(`http://${hostIp(n)}:8008/sync`)))).some(Boolean));
    say(`Postgres: primary on host1, two standbys, one synchronous (${s(t0)})`);
    await waitUntil("NATS JetStream", async () => (await Promise.all(HOSTS.map((n) => httpOk(`http://${hostIp(n)}:8222/healthz`)))).every(Boolean));
    await waitUntil("Redis and Sentinel", () => redisPrimary() === hostIp(1));
    say(`NATS: 3 nodes; Redis: primary on host1, Sentinel on every host (${s(t0)})`);
    // Each service's role and schema, before three launchers would make them at once.
    const { serviceDatabases } = await import(pathToFileURL(join(ROOT, "deploy", "database-roles.ts")).href);
    await serviceDatabases(`postgres://postgres:${state.pgPassword}@${hostIp(1)}:5432/postgres`, serviceDomains());
    for (const n of HOSTS) startVnm(n, state);
    await Promise.all(HOSTS.map((n) => waitHostReady(n, state)));
    say(`every gateway ready (${s(t0)})`);
  } catch (err) {
    say(`up failed: ${(err as Error).message}; taking everything down`);
    await down(true);
    process.exit(1);
  }
  printHosts(state);
}

const s = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

function printHosts(state: HostsState): void {
  const lines = [...HOSTS.map((n) => `host${n} ${gatewayUrl(n)}`), `admin ${state.adminUser} ${state.adminPassword}`];
  process.stdout.write(`${lines.join("\n")}\n`);
}

export async function kill(n: number): Promise<void> {
  await killAll(hostNs(n));
}

/** Cuts the host off for `seconds`, then heals it (the cut is undone on any exit of this process). */
export async function isolate(n: number, seconds: number): Promise<void> {
  cutHost(n, true);
  const heal = () => cutHost(n, false);
  process.once("SIGINT", () => {
    heal();
    process.exit(130);
  });
  try {
    await sleep(seconds * 1000);
  } finally {
    heal();
  }
}

/** Starts a killed host's processes again; its Redis follows the primary the Sentinels name. */
export async function restore(n: number, state: HostsState, wait = true): Promise<void> {
  if (pidsOf(hostNs(n)).length > 0) throw new Error(`host${n} still has processes: kill it first`);
  startEtcd(n);
  startPatroni(n);
  startHaproxy(n);
  startNats(n);
  startRedis(n, redisPrimary([n]) ?? hostIp(n));
  startSentinel(n);
  startVnm(n, state);
  if (wait) await waitHostReady(n, state);
}

async function down(quiet = false): Promise<void> {
  for (const ns of [...HOSTS.map(hostNs), SWITCH]) {
    if (run("ip", ["netns", "list"]).split("\n").some((l) => l.split(" ")[0] === ns)) await killAll(ns, "SIGTERM", 3_000);
  }
  removeNetwork();
  rmSync(RUN, { recursive: true, force: true });
  if (!quiet) say("down: no namespace, link, process or file of the hosts is left");
}

async function status(): Promise<void> {
  const state = readState();
  printHosts(state);
  const primary = await pgPrimary();
  process.stdout.write(`postgres-primary ${primary ? `host${primary}` : "none"}\nredis-primary ${redisPrimary() ?? "none"}\n`);
  for (const n of HOSTS) process.stdout.write(`host${n} processes ${pidsOf(hostNs(n)).length} ready ${await gatewayReady(n).catch(() => false)}\n`);
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case "up":
      return up();
    case "down":
      return down();
    case "kill":
      return kill(hostArgument(rest[0]));
    case "isolate": {
      const n = hostArgument(rest[0]);
      const seconds = Number(rest[1]);
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 3600) fail(`isolate takes a host and seconds (1 to 3600), got ${rest[1] ?? "nothing"}`);
      readState();
      return isolate(n, seconds);
    }
    case "restore":
      return restore(hostArgument(rest[0]), readState());
    case "status":
      return status();
    case "chaos": {
      const { chaos } = await import(pathToFileURL(join(ROOT, "deploy", "hosts-chaos.ts")).href);
      return chaos(rest);
    }
    default:
      fail("usage: npm run hosts -- up | kill <hostN> | isolate <hostN> <seconds> | restore <hostN> | status | down | chaos");
  }
}

// Not awaited at the top: the chaos check imports this module while main() runs.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err: Error) => fail(err.message));
}
