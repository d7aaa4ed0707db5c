// The repository's layout, for the tools that run its processes (launcher, tests, bench).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * Flags for every process of the system. A 4 MiB semi-space keeps the young generation small
 * (V8 sizes it from the machine's memory otherwise): under load the gateway and the services
 * then stay near 200 MB instead of growing past 400 MB, at no measurable cost in throughput.
 */
export const NODE_FLAGS = ["--max-semi-space-size=4"];

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
