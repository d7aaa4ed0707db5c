// Builds the `vnm` bin: cli/dist/vnm.js, one ES module that runs on Node 20 and later from any
// directory, with the proto files the catalog reads at run time in cli/dist/proto.
// Plain JavaScript, so it runs under any Node (npm's `prepare` runs it at install).
//
// The CLI needs only the catalog of @vnm/kit (which reads the proto files); the kit's index also
// brings Postgres, NATS, logging and telemetry, so the bundle takes catalog.ts alone, and the
// gRPC packages proto.ts imports for its channels (which the CLI never opens) are left out.
import { chmodSync, cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const kitCatalog = join(here, "..", "services", "kit", "src", "catalog.ts");

/** @type {import("esbuild").Plugin} */
const catalogOnly = {
  name: "catalog-only",
  setup(b) {
    b.onResolve({ filter: /^@vnm\/kit$/ }, () => ({ path: kitCatalog }));
    b.onResolve({ filter: /^@grpc\/(grpc-js|proto-loader)$/ }, (a) => ({ path: a.path, namespace: "unused" }));
    b.onLoad({ filter: /.*/, namespace: "unused" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

rmSync(dist, { recursive: true, force: true });
await build({
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(dist, "vnm.js"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  plugins: [catalogOnly],
  logLevel: "warning",
  logOverride: { "import-is-undefined": "silent" },
  // The proto directory is the one shipped beside the bundle; CommonJS dependencies get a require.
  define: { "process.env.VNM_PROTO_DIR": "__vnmProtoDir" },
  banner: {
    js: [
      'import { createRequire as __vnmRequire } from "node:module";',
      'import { fileURLToPath as __vnmPath } from "node:url";',
      "const require = __vnmRequire(import.meta.url);",
      'const __vnmProtoDir = __vnmPath(new URL("./proto", import.meta.url));',
    ].join("\n"),
  },
});
for (const d of ["google", "vnm"]) cpSync(join(here, "..", "proto", d), join(dist, "proto", d), { recursive: true });
chmodSync(join(dist, "vnm.js"), 0o755);
