// The image's build step, runnable anywhere: `node deploy/build.ts <out>` compiles the gateway's
// and every service's sources to JavaScript (tsc, deploy/tsconfig.build.json: no tests, no
// test helpers), builds the web console's static files (console/dist, Vite), and lays them out
// as the repository is, with what they read at run time (the proto files, data files next to the
// sources) and each workspace's package.json pointing at the compiled files. `npm install
// --omit=dev` in <out> then gives a tree with no TypeScript at all.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ROOT } from "@vnm/kit/repo";
import { isRecord, stringMember } from "@vnm/kit/values";

/** The workspaces the image holds (the operators' CLI and the console's sources only as a package.json: npm wants it). */
function workspaces(): string[] {
  return ["gateway", "cli", "console", ...readdirSync(join(ROOT, "services")).map((d) => `services/${d}`)].filter((w) => existsSync(join(ROOT, w, "package.json")));
}

/** The web console's static files (Vite), where the gateway looks for them: console/dist. */
function buildConsole(out: string): void {
  const vite = join(ROOT, "node_modules", "vite", "bin", "vite.js");
  const args = [vite, "build", "--configLoader", "native", "--logLevel", "warn", "--outDir", join(out, "console", "dist"), "--emptyOutDir"];
  execFileSync(process.execPath, args, { cwd: join(ROOT, "console"), stdio: "inherit" });
}

/** A package.json whose entry points name the compiled files; no scripts or dev dependencies. */
function compiledManifest(text: string): string {
  const pkg: unknown = JSON.parse(text);
  if (!isRecord(pkg)) throw new Error("a package.json is not a JSON object");
  delete pkg["scripts"];
  delete pkg["devDependencies"];
  return `${JSON.stringify(pkg, null, 2).replace(/(\.\/src\/[\w/.-]+)\.ts"/g, '$1.js"')}\n`;
}

/**
 * Compiles into <out>. A type error fails the build unless `typeErrors` is "warn" (the bench: it
 * measures the sources as they are, as running them from .ts would; tsc emits JavaScript anyway).
 */
export function build(out: string, typeErrors: "fail" | "warn" = "fail"): void {
  const tsc = join(ROOT, "node_modules", ".bin", "tsc");
  try {
    execFileSync(tsc, ["-p", join(ROOT, "deploy", "tsconfig.build.json"), "--outDir", out], { stdio: "inherit" });
  } catch (err) {
    if (typeErrors === "fail" || !existsSync(join(out, "gateway", "src", "main.js"))) throw err;
    process.stderr.write("# build: type errors above; running the JavaScript tsc emitted anyway\n");
  }
  for (const w of workspaces()) {
    mkdirSync(join(out, w), { recursive: true });
    writeFileSync(join(out, w, "package.json"), compiledManifest(readFileSync(join(ROOT, w, "package.json"), "utf8")));
    // Data files the sources read next to themselves (a password list, say).
    const src = join(ROOT, w, "src");
    if (w !== "cli" && w !== "console" && existsSync(src)) {
      cpSync(src, join(out, w, "src"), { recursive: true, filter: (p) => !/\.ts$/.test(p) });
    }
  }
  buildConsole(out);
  cpSync(join(ROOT, "proto"), join(out, "proto"), { recursive: true });
  // The image's root manifest names only the workspaces the image holds (not the tests, nor the bench).
  const root: unknown = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  writeFileSync(join(out, "package.json"), compiledManifest(JSON.stringify({ ...(isRecord(root) ? root : {}), workspaces: workspaces() })));
  cpSync(join(ROOT, "package-lock.json"), join(out, "package-lock.json"));
}

/**
 * A node_modules in <out> as `npm install` lays it out, without running npm: this repository's
 * third-party packages linked, and each @vnm/* workspace linked to its compiled copy. For running
 * the build on this machine (the bench, the image test); the image installs with npm instead.
 */
export function linkModules(out: string): void {
  const modules = join(out, "node_modules");
  mkdirSync(join(modules, "@vnm"), { recursive: true });
  for (const name of readdirSync(join(ROOT, "node_modules"))) {
    if (name !== "@vnm" && name !== ".bin") symlinkSync(join(ROOT, "node_modules", name), join(modules, name));
  }
  for (const w of ["gateway", ...readdirSync(join(out, "services")).map((d) => `services/${d}`)]) {
    const name = stringMember(JSON.parse(readFileSync(join(out, w, "package.json"), "utf8")), "name");
    if (name === undefined) throw new Error(`${w}/package.json names no package`);
    symlinkSync(join(out, w), join(modules, name));
    // A workspace's own versions of packages the root holds in another version (the tunnel
    // service's ipaddr.js 2 beside express's 1) stay its own, as npm nests them.
    const nested = join(ROOT, w, "node_modules");
    if (existsSync(nested)) symlinkSync(nested, join(out, w, "node_modules"));
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const out = resolve(process.argv[2] ?? "dist");
  mkdirSync(dirname(out), { recursive: true });
  build(out);
  process.stdout.write(`compiled into ${out}\n`);
}
