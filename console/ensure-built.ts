// Builds the console when its files are missing or older than what they are made from (its
// sources, the proto files, and the services' and the kit's sources, whose declarations its
// catalog reads: defaults, a rule type's fields): `npm start` runs this first, so a fresh clone
// serves the console.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const here = import.meta.dirname;
const root = join(here, "..");
const built = join(here, "dist", "index.html");

/** The newest modification time below the paths (files, or folders walked). */
function newest(paths: string[]): number {
  let t = 0;
  for (const p of paths) {
    if (!existsSync(p)) continue;
    const s = statSync(p);
    if (s.isDirectory()) t = Math.max(t, newest(readdirSync(p).map((n) => join(p, n))));
    else t = Math.max(t, s.mtimeMs);
  }
  return t;
}

const services = readdirSync(join(root, "services")).map((d) => join(root, "services", d, "src"));
const sources = [join(here, "src"), join(here, "public"), join(here, "index.html"), join(here, "catalog.ts"), join(here, "vite.config.ts"), join(root, "proto"), ...services];
if (!existsSync(built) || newest(sources) > statSync(built).mtimeMs) {
  process.stdout.write("[console] building the web console (console/dist)\n");
  execFileSync(process.execPath, [join(root, "node_modules", "vite", "bin", "vite.js"), "build", "--configLoader", "native", "--logLevel", "warn"], { cwd: here, stdio: "inherit" });
}
