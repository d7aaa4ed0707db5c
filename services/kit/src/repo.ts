// The repository's layout, for the tools that run its processes (launcher, tests, bench).
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * Flags for every process of the system (docs/perf/README.md has the figures). An 8 MiB
 * semi-space keeps short-lived request garbage out of the old space. `--heap-growing-percent=50`
 * lets the old generation grow to 1.5 times its live size before the next full GC instead of up to
 * 4 times (V8's factor for a heap limit derived from a machine of many GiB): under wrk a loaded
 * bridge service stays near 133-140 MB instead of 176-197 MB and a gateway near 133-142 MB instead
 * of 155-192 MB, with item GETs (hit and miss) unchanged side by side. It is no limit: an
 * allocation of 500 MB still succeeds. `--max-old-space-size=256` also kept memory low, but it is a
 * hard limit: an administrator's unpaged GET /bridges over 100,000 bridges (a 135 MB body, built
 * whole before lists were streamed) ended the gateway with it. --v8-pool-size=1 (5-8 MB less idle) cost 15-36% of the cache-miss throughput
 * with the limit; --optimize-for-size (idle under 100 MB) halved throughput.
 * `--no-allocation-site-pretenuring`: V8 may decide, from how long the objects of an allocation
 * site lived while the process started, to make that site's objects in the old space from then
 * on, and a per-request site so made fills the old space at the request rate. About half of the
 * gateways started ran so: a mark-compact every 0.2 s and 40-48 us of CPU per cached item
 * answer instead of 21-24 (8 of 8 started with the flag ran at 20.5-21.7).
 */
export const NODE_FLAGS = ["--max-semi-space-size=8", "--heap-growing-percent=50", "--no-allocation-site-pretenuring"];

/**
 * The memory allocator of every process: jemalloc (Debian's libjemalloc2) preloaded in place of
 * glibc's malloc, where the machine has it, with a background thread that gives unused pages
 * back while a process is quiet. glibc kept what V8's compiler threads and the sockets' buffers
 * had freed in its per-thread arenas: an idle bridge service held 24.8 MB in them and 15 MB in
 * its main heap. Idle RSS after the bench's 890 creates (docs/perf/README.md): bridge service
 * 94-98 MB against 99-121 with glibc, gateway 98-102 against 102-109; item GETs and POSTs side by
 * side no slower. The image sets the same (deploy/Dockerfile); an LD_PRELOAD already in the
 * environment is kept (an empty one keeps glibc's malloc).
 */
export const JEMALLOC_CONF = "background_thread:true";

/** Where Debian puts libjemalloc2 on this machine's architecture, and where the image links it. */
const JEMALLOC_PATHS = [`/usr/lib/${process.arch === "arm64" ? "aarch64" : "x86_64"}-linux-gnu/libjemalloc.so.2`, "/usr/local/lib/libjemalloc.so"];

/** The environment that runs a child process on jemalloc (see JEMALLOC_CONF); nothing when `env` names a preload already or the machine has no jemalloc. */
export function allocatorEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (env["LD_PRELOAD"] !== undefined) return {};
  const lib = JEMALLOC_PATHS.find((p) => existsSync(p));
  return lib ? { LD_PRELOAD: lib, MALLOC_CONF: env["MALLOC_CONF"] ?? JEMALLOC_CONF } : {};
}

/**
 * Where every process of a checkout keeps Node's compile cache (NODE_COMPILE_CACHE): the V8 code
 * of each module and, for the TypeScript sources, their stripped text, keyed by content and Node
 * version, so an edit or another Node simply misses. A process started from the sources spent
 * 0.87 s of CPU importing the kit without it and 0.40 s with it: a stack of twelve processes
 * starts on about half the CPU, which on two cores is what a test suite of forty stacks waits on.
 */
export const COMPILE_CACHE_DIR = join(ROOT, "node_modules", ".cache", "node-compile-cache");

/**
 * The environment every Node process of the system is started with beside its own: jemalloc
 * (allocatorEnv) and the checkout's compile cache, unless `env` chooses another cache or disables
 * it (NODE_DISABLE_COMPILE_CACHE).
 */
export function runtimeEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const cache = env["NODE_COMPILE_CACHE"] !== undefined || env["NODE_DISABLE_COMPILE_CACHE"] ? {} : { NODE_COMPILE_CACHE: COMPILE_CACHE_DIR };
  return { ...allocatorEnv(env), ...cache };
}

/** What a process sends its launcher (over the IPC channel) once it takes requests (the kit's announceReady). */
export const READY_MESSAGE = "vnm:ready";

/** Every service: a folder under services/ with a src/main.ts, in name order. */
export function serviceDomains(): string[] {
  return readdirSync(join(ROOT, "services"))
    .filter((d) => existsSync(join(ROOT, "services", d, "src", "main.ts")))
    .sort();
}

/** Environment variable holding a domain's gRPC address(es): VNM_<DOMAIN>_ADDR. */
export function addressVariable(domain: string): string {
  return `VNM_${domain.toUpperCase()}_ADDR`;
}

/** The variable holding a NATS user's password where the server and launchers read it: VNM_NATS_PASSWORD_<USER>. */
export function natsPasswordVariable(user: string): string {
  return `VNM_NATS_PASSWORD_${user.toUpperCase()}`;
}

/**
 * The connection settings of the NATS user `user` (VNM_NATS_USER, VNM_NATS_PASSWORD) when `env`
 * holds its password (VNM_NATS_PASSWORD_<USER>); none otherwise (a server without users).
 */
export function natsCredentials(env: NodeJS.ProcessEnv, user: string): NodeJS.ProcessEnv {
  const password = env[natsPasswordVariable(user)];
  return password ? { VNM_NATS_USER: user, VNM_NATS_PASSWORD: password } : {};
}

/**
 * The ports freePort hands out: the 12,000 below the kernel's ephemeral range
 * (net.ipv4.ip_local_port_range, from 32768 by default), which the kernel never picks on its own,
 * neither for a socket bound to port 0 nor as a connection's source port. A port is handed out
 * seconds before its process binds it; picked by the kernel, the same port went meanwhile to
 * another process's port 0 (in 2,000 such picks, 12 hit one of 25 ports handed out and not yet
 * bound) or to a connection's source port, and the process then could not listen, or, when a
 * process of another stack had it, that stack's process answered in its place.
 */
function portRange(): [number, number] {
  let low = 32_768;
  try {
    low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: the kernel's ephemeral ports start higher still (49152 on macOS)
  }
  return [Math.max(1_024, low - 12_000), low - 1];
}
const PORTS = portRange();

/**
 * Where every process of this machine records the ports it handed out (a file per port holding
 * its pid, created only if absent), so two processes never hand out the same one; a dead
 * process's ports are taken back, and a process's own go when it exits.
 */
const CLAIMS = join(tmpdir(), "vnm-ports");
const claimed = new Set<number>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether this process now holds `port`'s claim. */
function claim(port: number): boolean {
  const file = join(CLAIMS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      if (claimed.size === 0) process.once("exit", releaseClaims);
      claimed.add(port);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let holder = 0;
    try {
      holder = Number(readFileSync(file, "utf8"));
    } catch {
      continue; // its holder released it meanwhile
    }
    if (holder > 0 && alive(holder)) return false;
    // A dead process's claim: moved aside under a name of this process's own (only one taker's move succeeds), then removed.
    try {
      renameSync(file, `${file}.${process.pid}`);
      unlinkSync(`${file}.${process.pid}`);
    } catch {
      return false;
    }
  }
  return false;
}

function releaseClaims(): void {
  for (const port of claimed) {
    const file = join(CLAIMS, String(port));
    try {
      if (readFileSync(file, "utf8") === String(process.pid)) unlinkSync(file);
    } catch {
      // gone already
    }
  }
  claimed.clear();
}

/** Whether something can listen on 127.0.0.1:port now (nothing else does). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen({ port, host: "127.0.0.1", exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * A TCP port on the loopback interface that nothing listened on a moment ago, which no process of
 * this machine was handed before while it lives (this one included), and which the kernel does
 * not give out by itself (PORTS).
 */
export async function freePort(): Promise<number> {
  mkdirSync(CLAIMS, { recursive: true });
  const [low, high] = PORTS;
  const size = high - low + 1;
  const start = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = low + ((start + i) % size);
    if (claimed.has(port) || !claim(port)) continue;
    // Claimed for the life of this process even when something outside listens on it: not tried again.
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port left in ${low}-${high}`);
}

/** The parts that exchange a client credential for their service token: every one but identity, which signs its own. */
export function credentialParts(): string[] {
  return [...serviceDomains().filter((d) => d !== "identity"), "gateway"];
}

export interface ServiceCredentials {
  /** Each part's secret, by part. */
  credentials: Map<string, string>;
  /** Identity's VNM_SERVICE_CLIENTS. */
  clients: string;
}

/** Client credentials for the parts of a deployment (the launcher's, a test's; every part's by default). */
export function serviceCredentials(names: readonly string[] = credentialParts()): ServiceCredentials {
  const credentials = new Map(names.map((n) => [n, randomBytes(32).toString("base64url")]));
  return { credentials, clients: serviceClients(credentials) };
}

/** What one part is given of a deployment's credentials: identity the hashes, every other part its own credential. */
export function credentialEnv({ credentials, clients }: ServiceCredentials, part: string): NodeJS.ProcessEnv {
  return part === "identity" ? { VNM_SERVICE_CLIENTS: clients } : { VNM_SERVICE_CREDENTIAL: credentials.get(part) };
}

/** Identity's VNM_SERVICE_CLIENTS for these parts' credentials: each part's name and the SHA-256 of its credential. */
export function serviceClients(credentials: ReadonlyMap<string, string>): string {
  return [...credentials].map(([n, c]) => `${n}:${createHash("sha256").update(c).digest("hex")}`).join(",");
}
