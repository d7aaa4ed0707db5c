// Builds the `vnm` bin: cli/dist/vnm.js, one ES module that runs on Node 20 and later from any
// directory, with nothing beside it and no dependency at run time. Plain JavaScript, so it runs
// under any Node (npm's `prepare` runs it at install; `npm test` runs it before the tests).
//
// The CLI's catalog (src/catalog.ts) is taken from the kit's catalog here, once: src/snapshot.ts,
// bundled with the kit's catalog (not its database, bus and telemetry modules, nor the gRPC
// packages), prints it as JSON from the contract's descriptor set (proto/contract.binpb), and the
// bin carries that JSON instead of the kit and the descriptor set.
import { execFileSync } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const kit = join(here, "..", "services", "kit", "src");

/** @type {(contents: string, resolveDir?: string) => import("esbuild").Plugin} */
const kitAs = (contents, resolveDir) => ({
  name: "kit",
  setup(b) {
    b.onResolve({ filter: /^@vnm\/kit$/ }, () => ({ path: "@vnm/kit", namespace: "kit" }));
    b.onLoad({ filter: /.*/, namespace: "kit" }, () => ({ contents, resolveDir, loader: "js" }));
    b.onResolve({ filter: /^@grpc\/(grpc-js|proto-loader)$/ }, (a) => ({ path: a.path, namespace: "unused" }));
    b.onLoad({ filter: /.*/, namespace: "unused" }, () => ({ contents: "export {};", loader: "js" }));
  },
});

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  logLevel: "warning",
  logOverride: { "import-is-undefined": "silent" },
  // CommonJS dependencies inside an ES module get a require.
  banner: { js: 'import { createRequire as __vnmRequire } from "node:module";\nconst require = __vnmRequire(import.meta.url);' },
};

rmSync(dist, { recursive: true, force: true });
// Run from within the checkout, on its proto directory.
const reader = join(dist, "snapshot.mjs");
await build({
  ...common,
  entryPoints: [join(here, "src", "snapshot.ts")],
  outfile: reader,
  plugins: [kitAs('export * from "./catalog.ts";\nexport * from "./references.ts";', kit)],
});
const snapshot = execFileSync(process.execPath, [reader, join(here, "..", "proto")], { maxBuffer: 64 << 20 }).toString();
rmSync(reader);

await build({
  ...common,
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(dist, "vnm.js"),
  plugins: [kitAs('export function loadCatalog() { throw new Error("the bundle carries its catalog"); }\nexport const writableFields = loadCatalog;\nexport const references = loadCatalog;')],
  define: { __VNM_CATALOG__: snapshot },
});
chmodSync(join(dist, "vnm.js"), 0o755);
