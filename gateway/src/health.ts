// What needs no token: /healthz (the process answers), /readyz (every service, the cache and
// the bus answer), /metrics (Prometheus text) and /openapi.json (the API's description).
import type express from "express";
import type { Gateway } from "./context.ts";
import { openApi } from "./openapi.ts";

export function healthRoutes(app: express.Express, gw: Gateway): void {
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });

  app.get("/readyz", async (_req, res) => {
    const domains = [...new Set(gw.catalog.services.map((s) => s.domain))];
    const results = await Promise.all([
      ...domains.map(async (d) => [d, (await gw.upstream.health(d, 1_000)) ? "ok" : "unavailable"] as const),
      gw.cache.ready().then((ok) => ["cache", ok ? "ok" : "unavailable"] as const),
      Promise.resolve(["bus", gw.bus.state() === "connected" ? "ok" : "unavailable"] as const),
    ]);
    const checks = Object.fromEntries(results);
    const ok = Object.values(checks).every((v) => v === "ok");
    res.status(ok ? 200 : 503).json({ status: ok ? "ok" : "unavailable", checks });
  });

  // Built from the catalog once; its server is wherever it was fetched from ("/").
  let described: string | undefined;
  app.get("/openapi.json", (_req, res) => {
    described ??= openApi(gw.catalog);
    res.type("application/json").send(described);
  });

  app.get("/metrics", async (_req, res) => {
    res.type(gw.metrics.registry.contentType).send(await gw.metrics.registry.metrics());
  });

}
