// What needs no token: /healthz (the process answers), /readyz (the gateway can serve: a
// service behind it answers its gRPC health check, SERVING only while its Postgres answers),
// /metrics (Prometheus text) and /openapi.json (the API's description). /readyz names every
// dependency that does not answer: a domain service (its routes answer 503 meanwhile), the cache
// (Redis: reads go to the services) or the bus (NATS: the outbox holds changes). It stays 200,
// "degraded", while any service answers: each of those is the same for every gateway, and a
// readiness probe failing on it would take every gateway out at once, the healthy domains'
// traffic with it. It is a 503 only when no service answers: this gateway is cut off.
import { constants as H } from "node:http2";
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
    const checks = { ...Object.fromEntries(services), cache: cache ? "ok" : "unavailable", bus: gw.bus.state() === "connected" ? "ok" : "unavailable" };
    // One domain down is every gateway's view at once: it stays a 503 on that domain's routes,
    // and takes no gateway out of its Service. None answering means this gateway is cut off.
    const serving = services.some(([, v]) => v === "ok");
    const degraded = Object.entries(checks).flatMap(([k, v]) => (v === "ok" ? [] : [k]));
    const status = !serving ? "unavailable" : degraded.length > 0 ? "degraded" : "ok";
    res.status(serving ? H.HTTP_STATUS_OK : H.HTTP_STATUS_SERVICE_UNAVAILABLE).json({ status, checks, degraded });
  });

  // Built from the catalog once; its server is wherever it was fetched from ("/").
  let described: string | undefined;
  app.get("/openapi.json", (_req, res) => {
    described ??= openApi(gw.catalog);
    res.type("application/json").send(described);
  });

  app.get("/metrics", async (_req, res) => {
    res.type(gw.metrics.registry.contentType).send(await gw.metrics.text());
  });

}
