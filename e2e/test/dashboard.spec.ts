// The Grafana dashboard (deploy/grafana/vnm.json) charts only metric families the system
// exports: a renamed or removed family fails here instead of leaving an empty panel.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Metrics } from "@vnm/kit";
import { ROOT } from "@vnm/kit/testing";
import type pg from "pg";
import { expect, it } from "vitest";
import { vtepMetrics } from "../../services/tunnel/src/metrics.ts";

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
}

const dashboard = JSON.parse(readFileSync(join(ROOT, "deploy/grafana/vnm.json"), "utf8")) as { uid: string; panels: Panel[] };

/** Every family one process of the system can export (a service's, which has the most, and the tunnel service's own). */
function exported(): Metrics {
  const m = new Metrics("dashboard-check");
  const pool = { totalCount: 0, idleCount: 0, waitingCount: 0 } as pg.Pool;
  m.watchOutbox(pool);
  m.watchPool(pool);
  vtepMetrics(m.registry, () => []);
  return m;
}

it("every query names a family the gateway or a service exports", () => {
  const registry = exported().registry;
  const charts = dashboard.panels.filter((p) => p.type !== "row");
  expect(charts.length).toBeGreaterThan(10);
  for (const panel of charts) {
    expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    for (const { expr } of panel.targets!) {
      const names = expr.match(/\b(?:vnm|nodejs|process)_[a-z0-9_]+/g) ?? [];
      expect(names.length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        const family = name.replace(/_(bucket|sum|count)$/, "");
        expect(registry.getSingleMetric(family), `${panel.title}: ${name}`).toBeDefined();
      }
    }
  }
});

it("charts the families operators are told to watch (docs/operations.md)", () => {
  const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr).join("\n");
  const docs = readFileSync(join(ROOT, "docs/operations.md"), "utf8");
  const watched = new Set(docs.match(/`(vnm_[a-z_]+)/g)?.map((s) => s.slice(1)) ?? []);
  expect(watched.size).toBeGreaterThan(5);
  for (const family of watched) expect(exprs, family).toContain(family);
});
