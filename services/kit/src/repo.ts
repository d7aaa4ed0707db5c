// The repository's layout, for the tools that run its processes (launcher, tests, bench).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** Every service: a folder under services/ with a src/main.ts, in name order. */
export function serviceDomains(): string[] {
  return readdirSync(join(ROOT, "services"))
    .filter((d) => existsSync(join(ROOT, "services", d, "src", "main.ts")))
    .sort();
}
