// What needs no token: /healthz (the process answers), /readyz (the gateway can serve: every
// service answers its gRPC health check, SERVING only while its Postgres answers), /metrics
// (Prometheus text) and /openapi.json (the API's description). The cache (Redis) and the bus
// (NATS) are dependencies the gateway serves without (reads go to the services, the outbox holds
// changes): when they are down /readyz stays 200, says "degraded" and names them, so a readiness
// probe never takes every gateway out at once for them.
import type express from "express";
import type { Gateway } from "./context.ts";
import { openApi } from "./openapi.ts";

export function healthRoutes(app: express.Express, gw: Gateway): void {
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });

  app.get("/readyz", async (_req, res) => {
    const domains = [...new Set(gw.catalog.services.map((s) => s.domain))];
    const [services, cache] = await Promise.all([
      Promise.all(domains.map(async (d) => [d, (await gw.upstream.health(d, 1_000)) ? "ok" : "unavailable"] as const)),
      gw.cache.ready(),
    ]);
    const optional = { cache: cache ? "ok" : "unavailable", bus: gw.bus.state() === "connected" ? "ok" : "unavailable" };
    const serving = services.every(([, v]) => v === "ok");
    const degraded = Object.entries(optional).flatMap(([k, v]) => (v === "ok" ? [] : [k]));
    const status = !serving ? "unavailable" : degraded.length > 0 ? "degraded" : "ok";
    res.status(serving ? 200 : 503).json({ status, checks: { ...Object.fromEntries(services), ...optional }, degraded });
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
