// The console's build: static files in dist/, served by the gateway (the page at /, the rest
// under /console/). The catalog is the module "virtual:vnm-catalog", made from the proto files
// at build time (catalog.ts).
import { defineConfig, type Plugin } from "vite";
import { consoleCatalog } from "./catalog.ts";

const ID = "virtual:vnm-catalog";

function catalogModule(): Plugin {
  return {
    name: "vnm-catalog",
    resolveId: (id) => (id === ID ? `\0${ID}` : undefined),
    load: async (id) => (id === `\0${ID}` ? `export default ${JSON.stringify(await consoleCatalog())};` : undefined),
  };
}

export default defineConfig({
  base: "/console/",
  plugins: [catalogModule()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // No inline script anywhere: the page's Content-Security-Policy allows none.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: "es2022",
    // The catalog's plugin reads every proto file: on a busy machine Rolldown's warning that
    // plugins took most of the build lands on a first `npm start`, where nobody can act on it.
    rolldownOptions: { checks: { bundlerTimings: false } },
  },
});
