// The topology step (`--only topology`): BENCH_TOPO_ROUTERS routers (1,000), BENCH_TOPO_PORTS
// ports on them (10,000) and BENCH_TOPO_LINKS links between them (5,000), made through the API
// as the bridges are (POST /routers, POST /routers/{id}/ports, POST /ports/{id}/link, 16 at a
// time), the routers in tenants of BENCH_TOPO_TENANT_ROUTERS (50) and each link within a tenant.
// Then the reads, each a wrk row: a page of GET /ports, GET /routers/{id}/ports, GET /ports/{id}
// and GET /routers/{id} (the last three cycling over up to 1,000 items); and the console's
// drawing of one tenant's part in Chromium (headless, as a tenant administrator), from the
// navigation to the drawn SVG, BENCH_TOPO_DRAWS times (5).
import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "@vnm/kit/testing";
import { JSON_TYPE } from "./bridges.ts";
import type { Result, Runner } from "./scenario.ts";
import { TOPO } from "./settings.ts";
import { fmt } from "./table.ts";

type Api = (url: string | URL, init?: RequestInit) => Promise<Response>;

const CONCURRENCY = 16;
const CHROMIUM = "/usr/bin/chromium";

export interface TopologyFigures {
  routers: number;
  ports: number;
  links: number;
  /** Seconds to make them through the API. */
  buildSeconds: number;
  /** What one tenant's drawing held, and its times (ms from navigation start to the drawn SVG). */
  draw?: { tenant: string; routers: number; ports: number; ms: number[]; p50: number; p99: number };
  rows: string[];
}

async function pool<T>(n: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      out[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, worker));
  return out;
}

async function post(api: Api, url: string, body: unknown): Promise<{ id: string }> {
  const r = await api(url, { method: "POST", headers: JSON_TYPE, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`POST ${url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as { id: string };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? Number.NaN;
};

/** The routers, their ports (port k on router k mod routers) and the links, each within a tenant; gives the ids. */
async function build(api: Api, base: string, tag: string) {
  const { routers: nRouters, ports: nPorts, links: nLinks, tenantRouters } = TOPO;
  const tenantOf = (r: number) => `bench-topo-${tag}-${Math.floor(r / tenantRouters)}`;
  const routers = await pool(nRouters, async (r) => (await post(api, `${base}/routers`, { name: `r${r}`, tenantId: tenantOf(r) })).id);
  const ports = await pool(nPorts, async (k) => {
    const r = k % nRouters;
    const n = Math.floor(k / nRouters);
    return { id: (await post(api, `${base}/routers/${routers[r]}/ports`, { portAddress: `10.${n % 250}.${Math.floor(r / 250) % 250}.${(r % 250) + 1}`, networkLength: 24 })).id, router: r };
  });
  // Within each tenant, its ports round robin over its routers (router 0's first, router 1's
  // first, ...), linked two by two: consecutive ports are on different routers.
  const byTenant = new Map<string, typeof ports>();
  for (const p of [...ports].sort((a, b) => a.router - b.router)) byTenant.set(tenantOf(p.router), [...(byTenant.get(tenantOf(p.router)) ?? []), p]);
  const pairs: [string, string][] = [];
  for (const list of byTenant.values()) {
    const perRouter = new Map<number, string[]>();
    for (const p of list) perRouter.set(p.router, [...(perRouter.get(p.router) ?? []), p.id]);
    const lanes = [...perRouter.values()];
    const robin: { id: string; router: number }[] = [];
    for (let i = 0; lanes.some((l) => i < l.length); i++) {
      for (const [r, l] of lanes.entries()) if (l[i]) robin.push({ id: l[i]!, router: r });
    }
    for (let i = 0; i + 1 < robin.length; i += 2) if (robin[i]!.router !== robin[i + 1]!.router) pairs.push([robin[i]!.id, robin[i + 1]!.id]);
  }
  const links = pairs.slice(0, nLinks);
  await pool(links.length, async (i) => {
    const [a, b] = links[i]!;
    const r = await api(`${base}/ports/${a}/link`, { method: "POST", headers: JSON_TYPE, body: JSON.stringify({ peerId: b }) });
    if (r.status !== 201) throw new Error(`POST /ports/${a}/link: ${r.status} ${await r.text()}`);
  });
  return { routers, ports, links, tenant: tenantOf(0) };
}

/** The console drawing one tenant's part: a tenant administrator logged in, then `draws` navigations to #/topology. */
async function drawTimes(api: Api, base: string, tenant: string, routers: number, tag: string): Promise<number[]> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: the topology step draws the console in Debian's chromium`);
  const name = `bench-topo-${tag}`;
  const password = `Bench-${tag}-${Math.random().toString(36).slice(2)}-topology`;
  await post(api, `${base}/users`, { name, password, tenantId: tenant, roles: ["tenant_admin"] });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    context.setDefaultTimeout(60_000);
    const page = await context.newPage();
    await page.goto(`${base}/`);
    await page.getByLabel("User name").fill(name);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("button", { name: "Log out", exact: true }).waitFor();
    const ms: number[] = [];
    // The first drawing warms the browser's caches, as a user's second visit would be.
    for (let i = 0; i <= TOPO.draws; i++) {
      await page.goto(`${base}/#/topology`);
      await page.reload();
      // Read in the page at each frame: the time since the navigation started when every router is drawn.
      // A function, not a string: the page's Content-Security-Policy allows no eval.
      const drawn = (n: number) => {
        const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document;
        return doc.querySelectorAll("svg.topology [data-node]").length >= n ? performance.now() : 0;
      };
      const at = await page.waitForFunction(drawn, routers, { polling: "raf", timeout: 60_000 });
      const t = (await at.jsonValue()) as number;
      if (i > 0) ms.push(t);
    }
    return ms;
  } finally {
    await browser.close();
  }
}

/** The step: the topology made, its four reads as rows of the table, the console's drawing. */
export async function topologyRows(runner: Runner, api: Api, base: string, tag: string): Promise<TopologyFigures> {
  // The rows end with the console drawn in Chromium: built first if it is missing or older than
  // its sources, as npm start builds it, before anything of this step is measured.
  execFileSync(process.execPath, [join(ROOT, "console", "ensure-built.ts")], { stdio: "inherit" });
  console.error(`# topology: making ${fmt(TOPO.routers)} routers, ${fmt(TOPO.ports)} ports and up to ${fmt(TOPO.links)} links through the API`);
  const started = performance.now();
  const t = await build(api, base, tag);
  const buildSeconds = (performance.now() - started) / 1000;
  console.error(`# topology: made in ${fmt(buildSeconds, 1)} s (${fmt((TOPO.routers + TOPO.ports + t.links.length) / buildSeconds)} requests/s)`);
  const sample = <T>(xs: T[]) => xs.filter((_, i) => i % Math.max(1, Math.floor(xs.length / 1000)) === 0).slice(0, 1000);
  const results: Result[] = [];
  results.push(await runner.scenario("topology: GET /ports?limit=100 (a page)", "topology", { url: `${base}/ports?limit=100` }));
  results.push(await runner.scenario("topology: GET /routers/{id}/ports", "topology", { url: base, requests: sample(t.routers).map((id) => ({ path: `/routers/${id}/ports` })) }));
  results.push(await runner.scenario("topology: GET /ports/{id}", "topology", { url: base, requests: sample(t.ports).map((p) => ({ path: `/ports/${p.id}` })) }));
  results.push(await runner.scenario("topology: GET /routers/{id}", "topology", { url: base, requests: sample(t.routers).map((id) => ({ path: `/routers/${id}` })) }));
  const inTenant = Math.min(TOPO.tenantRouters, TOPO.routers);
  const ports = t.ports.filter((p) => p.router < inTenant).length;
  const ms = await drawTimes(api, base, t.tenant, inTenant, tag);
  const draw = { tenant: t.tenant, routers: inTenant, ports, ms, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99) };
  console.error(`# topology: the console drew ${inTenant} routers and ${ports} ports in p50 ${fmt(draw.p50)} ms, p99 ${fmt(draw.p99)} ms (${ms.length} draws)`);
  return { routers: t.routers.length, ports: t.ports.length, links: t.links.length, buildSeconds, draw, rows: results.map((r) => r.scenario) };
}

/** The lines a run prints under its table about the step. */
export function topologyLines(f: TopologyFigures): string[] {
  return [
    `topology: ${fmt(f.routers)} routers, ${fmt(f.ports)} ports, ${fmt(f.links)} links made through the API in ${fmt(f.buildSeconds, 1)} s; the reads are the table's topology rows (p50/p99 from wrk)`,
    ...(f.draw
      ? [
          `topology: the console's drawing of tenant ${f.draw.tenant} (${f.draw.routers} routers, ${fmt(f.draw.ports)} ports), navigation start to the drawn SVG in Chromium: p50 ${fmt(f.draw.p50)} ms, p99 ${fmt(f.draw.p99)} ms over ${f.draw.ms.length} draws (${f.draw.ms.map((m) => fmt(m)).join(", ")} ms)`,
        ]
      : []),
  ];
}
