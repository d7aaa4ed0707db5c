// The repository's layout, for the tools that run its processes (launcher, tests, bench).
import { existsSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * Flags for every process of the system (docs/perf/memory.md has the figures). V8 sizes the heap
 * from the machine's memory otherwise: with a heap limit of gigabytes it lets the old space grow to
 * several times its live size (23-31 MB) before a full GC, and a loaded gateway or service sat at
 * 200-250 MB RSS. A 256 MB old-space limit makes full GCs come early (loaded: gateway ~170 MB,
 * bridge service ~147 MB) and an 8 MiB semi-space keeps short-lived request garbage out of the
 * old space; side by side under wrk, throughput was unchanged. The limit is also a hard one: live
 * heap past 256 MB (a gateway's local cache copies are bounded by VNM_CACHE_LOCAL_BYTES, 64 MB)
 * ends the process. --v8-pool-size=1 (5-8 MB less idle) is not used: with the limit it cost 15-36%
 * of the cache-miss throughput.
 */
export const NODE_FLAGS = ["--max-semi-space-size=8", "--max-old-space-size=256"];

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

/** Ports this process handed out: the kernel may give a just-closed port again. */
const handedOut = new Set<number>();

/** A TCP port on the loopback interface that was free a moment ago, never one this process handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.listen(0, "127.0.0.1", () => {
        const a = s.address();
        const p = typeof a === "object" && a ? a.port : 0;
        s.close(() => resolve(p));
      });
      s.on("error", reject);
    });
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}
