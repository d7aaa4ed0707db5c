// The console's topology page and references end to end: the stack as real processes (the
// gateway's test harness), the console as built, Debian's Chromium through playwright-core. A
// tenant with two routers, three bridges, their ports and links sees exactly those as boxes, dots
// and lines, opens an item with a click, sees a link made through the API appear, and sees
// nothing of another tenant's; an administrator acting in the tenant also sees the host a port
// is bound to. References are links on an item's page and pickers in forms. With
// VNM_SCREENSHOTS=1 it writes docs/console/topology.png.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpClient, ROOT, useStack } from "@vnm/e2e/harness";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
const PASSWORD = `pw-${randomBytes(9).toString("hex")}`;
const TENANT = `topo-${fx.stack.id}`;
const OTHER = `else-${fx.stack.id}`;
const SHOTS = process.env["VNM_SCREENSHOTS"] === "1" ? join(ROOT, "docs", "console") : undefined;
const CHROMIUM = "/usr/bin/chromium";
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's serious and critical violations on the page as it is (evaluated through the DevTools protocol: the page's CSP allows no inline script). */
async function axeViolations(p: Page): Promise<string[]> {
  await p.evaluate(AXE);
  const result = (await p.evaluate(
    "axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) })))",
  )) as { id: string; impact: string; targets: string[] }[];
  return result.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}: ${v.targets.join(", ")}`);
}

let browser: Browser;
const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 15_000 });

async function made(method: string, path: string, body?: unknown): Promise<{ id: string; [k: string]: unknown }> {
  const r = await http(method, path, body);
  expect(r.status, `${method} ${path}: ${r.text}`).toBe(201);
  return r.json as { id: string };
}

async function loggedIn(name: string, password: string, tenant = ""): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  context.setDefaultTimeout(15_000);
  const p = await context.newPage();
  await p.goto(`${fx.gw}/`);
  await p.getByLabel("User name").fill(name);
  await p.getByLabel("Password").fill(password);
  if (tenant) await p.getByLabel("Tenant (optional)").fill(tenant);
  await p.getByRole("button", { name: "Log in" }).click();
  await p.getByRole("button", { name: "Log out", exact: true }).waitFor();
  return { context, page: p };
}

const ids = (p: Page, selector: string, attr: string) => p.locator(selector).evaluateAll((els, a) => els.map((e) => e.getAttribute(a as string) ?? "").sort(), attr);
const pair = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`);

// The tenant's network: r1 links b1 and b2, r1 links r2, r2 links b3 later (through the API, while the page is open).
const t: Record<string, { id: string }> = {};
let other: Record<string, { id: string }> = {};

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const r = await http("POST", "/users", { name: `ta-${fx.stack.id}`, password: PASSWORD, tenantId: TENANT, roles: ["tenant_admin"] });
  expect(r.status, r.text).toBe(201);
  t["r1"] = await made("POST", "/routers", { name: "edge", tenantId: TENANT });
  t["r2"] = await made("POST", "/routers", { name: "core", tenantId: TENANT });
  for (const b of ["b1", "b2", "b3"]) t[b] = await made("POST", "/bridges", { name: `net-${b}`, tenantId: TENANT });
  const rp = (router: string, n: number) => made("POST", `/routers/${t[router]!.id}/ports`, { portAddress: `10.0.${n}.1`, networkLength: 24 });
  const bp = (bridge: string) => made("POST", `/bridges/${t[bridge]!.id}/ports`, {});
  t["r1b1"] = await rp("r1", 1);
  t["r1b2"] = await rp("r1", 2);
  t["r1r2"] = await rp("r1", 3);
  t["r2r1"] = await rp("r2", 3);
  t["r2b3"] = await rp("r2", 4);
  t["b1r1"] = await bp("b1");
  t["b2r1"] = await bp("b2");
  t["b3r2"] = await bp("b3");
  t["b3free"] = await bp("b3");
  for (const [a, b] of [
    ["r1b1", "b1r1"],
    ["r1b2", "b2r1"],
    ["r1r2", "r2r1"],
  ] as const) {
    const l = await http("POST", `/ports/${t[a]!.id}/link`, { peerId: t[b]!.id });
    expect(l.status, l.text).toBe(201);
  }
  // Another tenant's router and bridge, linked.
  other = { router: await made("POST", "/routers", { name: "theirs", tenantId: OTHER }), bridge: await made("POST", "/bridges", { name: "their-net", tenantId: OTHER }) };
  const op = await made("POST", `/routers/${other["router"]!.id}/ports`, { portAddress: "10.9.0.1", networkLength: 24 });
  const ob = await made("POST", `/bridges/${other["bridge"]!.id}/ports`, {});
  expect((await http("POST", `/ports/${op.id}/link`, { peerId: ob.id })).status).toBe(201);
  other["port"] = op;
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

describe("the topology page", () => {
  it("draws a tenant's routers, bridges, ports and links; a click opens the item; a link made through the API appears; another tenant's devices are absent", async () => {
    const { context, page } = await loggedIn(`ta-${fx.stack.id}`, PASSWORD);
    try {
      await page.getByRole("navigation", { name: "Kinds" }).getByRole("link", { name: "Topology" }).click();
      await page.getByRole("heading", { name: "Topology" }).waitFor();
      await poll(() => ids(page, '[data-kind="Router"]', "data-node")).toEqual([t["r1"]!.id, t["r2"]!.id].sort());
      expect(await ids(page, '[data-kind="Bridge"]', "data-node")).toEqual([t["b1"]!.id, t["b2"]!.id, t["b3"]!.id].sort());
      expect(await ids(page, "[data-port]", "data-port")).toEqual(
        ["r1b1", "r1b2", "r1r2", "r2r1", "r2b3", "b1r1", "b2r1", "b3r2", "b3free"].map((k) => t[k]!.id).sort(),
      );
      const links = async () => (await ids(page, "[data-link]", "data-link")).map((l) => pair(...(l.split("|") as [string, string]))).sort();
      expect(await links()).toEqual([pair(t["r1b1"]!.id, t["b1r1"]!.id), pair(t["r1b2"]!.id, t["b2r1"]!.id), pair(t["r1r2"]!.id, t["r2r1"]!.id)].sort());
      // Nothing of the other tenant's.
      const html = await page.locator(".topology-wrap").innerHTML();
      for (const o of Object.values(other)) expect(html).not.toContain(o.id);
      expect(await page.locator(".topo-summary").textContent()).toContain("2 routers, 3 bridges, 9 ports, 3 links");
      // Live: a link made through the API shows up.
      const l = await http("POST", `/ports/${t["r2b3"]!.id}/link`, { peerId: t["b3r2"]!.id });
      expect(l.status, l.text).toBe(201);
      await poll(links).toContain(pair(t["r2b3"]!.id, t["b3r2"]!.id));
      // A router created through the API appears too.
      const r3 = await made("POST", "/routers", { name: "late", tenantId: TENANT });
      await poll(() => ids(page, '[data-kind="Router"]', "data-node")).toContain(r3.id);
      expect(await axeViolations(page)).toEqual([]);
      if (SHOTS) {
        mkdirSync(SHOTS, { recursive: true });
        await page.screenshot({ path: join(SHOTS, "topology.png"), fullPage: false });
      }
      // A click on a box opens its item.
      await page.locator(`[data-node="${t["r1"]!.id}"]`).click();
      await page.getByRole("heading", { name: "Router edge" }).waitFor();
    } finally {
      await context.close();
    }
  });

  it("shows an administrator acting in the tenant the host a port is bound to", async () => {
    const zone = await made("POST", "/tunnel_zones", { name: `tz-${fx.stack.id}`, type: "vxlan" });
    const host = await made("POST", "/hosts", { name: `compute-${fx.stack.id}`, addresses: ["192.0.2.10"] });
    const m = await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: host.id, ipAddress: "192.0.2.10" });
    expect(m.status, m.text).toBe(201);
    const b = await http("POST", `/hosts/${host.id}/ports`, { portId: t["b3free"]!.id, interfaceName: "tap0" });
    expect(b.status, b.text).toBe(201);
    const { context, page } = await loggedIn("admin", fx.stack.adminPassword, TENANT);
    try {
      await page.goto(`${fx.gw}/#/topology`);
      await poll(() => ids(page, '[data-kind="Host"]', "data-node")).toEqual([host.id]);
      expect(await ids(page, "[data-binding]", "data-binding")).toEqual([`${t["b3free"]!.id}|${host.id}`]);
      // Only this tenant's devices, though an administrator may see every one.
      const html = await page.locator(".topology-wrap").innerHTML();
      expect(html).not.toContain(other["router"]!.id);
      expect(html).toContain(t["r1"]!.id);
    } finally {
      await context.close();
    }
  });
});

describe("references", () => {
  it("an item's page links the items its fields name; a form picks them by name, searched as typed, not an id typed in", async () => {
    const { context, page } = await loggedIn(`ta-${fx.stack.id}`, PASSWORD);
    try {
      // A port's page: its peer and its device are links to their pages; a port, which has no
      // name, is said by its type and its device's name.
      await page.goto(`${fx.gw}/#/item/routing.Port/${encodeURIComponent(`/ports/${t["b1r1"]!.id}`)}`);
      const peer = page.locator('dd a[data-ref="routing.Port"]');
      await poll(() => peer.textContent()).toBe(`Router · edge (${t["r1b1"]!.id})`);
      await poll(() => page.locator('dd a[data-ref="bridge.Bridge"]').textContent()).toBe(`net-b1 (${t["b1"]!.id})`);
      await peer.click();
      await poll(() => page.locator('dd a[data-ref="routing.Router"]').textContent()).toBe(`edge (${t["r1"]!.id})`);
      // The router's ports table links each port (its id) and names its device (issue 55: names, not ids); a port's page links its peer.
      await page.goto(`${fx.gw}/#/item/routing.Router/${encodeURIComponent(`/routers/${t["r1"]!.id}`)}`);
      const table = page.getByRole("region", { name: "Ports", exact: true });
      await table.getByRole("link", { name: "edge", exact: true }).first().waitFor();
      await table.getByRole("link", { name: t["r1b1"]!.id, exact: true }).click();
      await page.locator('dd a[data-ref="routing.Port"]').click();
      await poll(() => page.locator('dd a[data-ref="bridge.Bridge"]').textContent()).toBe(`net-b1 (${t["b1"]!.id})`);
      // A new port: where (on a router, on a bridge), then the device searched and picked by name.
      await page.goto(`${fx.gw}/#/new/routing.Port`);
      await page.getByRole("heading", { name: "New port" }).waitFor();
      const where = page.getByLabel("Where");
      expect(await where.locator("option").allTextContents()).toEqual(["On a router", "On a bridge"]);
      await where.selectOption({ label: "On a bridge" });
      const device = page.getByRole("combobox", { name: /^Bridge\b/ });
      await device.fill("net-b");
      const options = page.getByRole("listbox").getByRole("option");
      await poll(() => options.allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining("net-b2")]));
      expect((await options.allTextContents()).join()).not.toContain("their-net");
      await options.filter({ hasText: "net-b2" }).click();
      await poll(() => device.inputValue()).toBe("net-b2");
      await page.getByRole("button", { name: "Create" }).click();
      await poll(() => page.locator('dd a[data-ref="bridge.Bridge"]').textContent()).toBe(`net-b2 (${t["b2"]!.id})`);
    } finally {
      await context.close();
    }
  });
});
