// The repository's layout, for the tools that run its processes (launcher, tests, bench).
import { existsSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * Flags for every process of the system (docs/perf/memory.md has the figures). A 4 MiB
 * semi-space keeps the young generation small (V8 sizes it from the machine's memory otherwise):
 * under load the gateway and the services then stay near 200-250 MB instead of growing past
 * 400 MB; smaller promotes more to the old space. One V8 worker thread instead of four: 5-8 MB
 * less per process, no measurable cost in throughput on these 2 cores.
 */
export const NODE_FLAGS = ["--max-semi-space-size=4", "--v8-pool-size=1"];

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
