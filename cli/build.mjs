// Builds the `vnm` bin: cli/dist/vnm.js, one ES module that runs on Node 20 and later from any
// directory, with nothing beside it. Plain JavaScript, so it runs under any Node (npm's
// `prepare` runs it at install; `npm test` runs it before the tests).
//
// The CLI needs only the catalog of @vnm/kit; the kit's index also brings Postgres, NATS,
// logging and telemetry, so the bundle takes catalog.ts and proto.ts alone, and leaves out the gRPC packages
// proto.ts imports for its channels (the CLI never opens one). The proto files are read once
// here, by the kit's own loader (src/reflection.ts), and go into the bundle as JSON.
import { execFileSync } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const kit = join(here, "..", "services", "kit", "src");

/** @type {import("esbuild").Plugin} */
const catalogOnly = {
  name: "catalog-only",
  setup(b) {
    b.onResolve({ filter: /^@vnm\/kit$/ }, () => ({ path: "@vnm/kit", namespace: "kit" }));
    b.onLoad({ filter: /.*/, namespace: "kit" }, () => ({ contents: 'export * from "./catalog.ts";\nexport * from "./proto.ts";', resolveDir: kit, loader: "js" }));
    b.onResolve({ filter: /^@grpc\/(grpc-js|proto-loader)$/ }, (a) => ({ path: a.path, namespace: "unused" }));
    b.onLoad({ filter: /.*/, namespace: "unused" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  plugins: [catalogOnly],
  logLevel: "warning",
  logOverride: { "import-is-undefined": "silent" },
  // CommonJS dependencies inside an ES module get a require.
  banner: { js: 'import { createRequire as __vnmRequire } from "node:module";\nconst require = __vnmRequire(import.meta.url);' },
};

// The proto files' reflection, read by the kit's loader (from within the checkout, where it
// finds protobufjs's descriptor.proto).
rmSync(dist, { recursive: true, force: true });
const reader = join(dist, "reflection.mjs");
await build({ ...common, entryPoints: [join(here, "src", "reflection.ts")], outfile: reader });
const reflection = execFileSync(process.execPath, [reader], { env: { ...process.env, VNM_PROTO_DIR: join(here, "..", "proto") }, maxBuffer: 64 << 20 }).toString();
rmSync(reader);

await build({
  ...common,
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(dist, "vnm.js"),
  define: { __VNM_PROTO_JSON__: reflection },
});
chmodSync(join(dist, "vnm.js"), 0o755);
