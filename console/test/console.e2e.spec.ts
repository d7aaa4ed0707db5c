// The web console end to end: the gateway and every service as real processes on the machine's
// Postgres, NATS and Redis (the gateway's test harness), the console as `npm test` built it
// (console/dist), driven in Debian's Chromium through playwright-core. With VNM_SCREENSHOTS=1
// it also writes the screenshots of docs/console.md.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpClient, ROOT, useStack, waitFor } from "@vnm/e2e/harness";
import { OvsdbServer } from "@vnm/e2e/ovsdb-server";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
const PASSWORD = `pw-${randomBytes(9).toString("hex")}`;
const TENANT = `acme-${fx.stack.id}`;
const OTHER = `other-${fx.stack.id}`;
const SHOTS = process.env["VNM_SCREENSHOTS"] === "1" ? join(ROOT, "docs", "console") : undefined;
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let browser: Browser;
let admin: BrowserContext;
let page: Page;

/** A new browser context (its own sessionStorage) logged in through the form. */
async function loggedIn(name: string, password: string, viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(10_000);
  const p = await context.newPage();
  await p.goto(`${fx.gw}/`);
  await p.getByLabel("User name").fill(name);
  await p.getByLabel("Password").fill(password);
  await p.getByRole("button", { name: "Log in" }).click();
  await p.getByRole("button", { name: "Log out", exact: true }).waitFor();
  return { context, page: p };
}

/** axe-core's serious and critical violations on the page as it is. */
async function axeViolations(p: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's Content-Security-Policy allows no inline script.
  await p.evaluate(AXE);
  const result = (await p.evaluate(
    "axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) })))",
  )) as { id: string; impact: string; targets: string[] }[];
  return result.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}: ${v.targets.join(", ")}`);
}

async function shot(p: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await p.evaluate("window.scrollTo(0, 0)");
  await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

/** expect.poll with room for a loaded machine (its default waits one second). */
const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 10_000 });

const row = (p: Page, text: string) => p.getByRole("row").filter({ hasText: text });

const CHROMIUM = "/usr/bin/chromium";

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  for (const [name, tenantId, role] of [
    [`ta-${fx.stack.id}`, TENANT, "tenant_admin"],
    [`tu-${fx.stack.id}`, TENANT, "tenant_user"],
  ] as const) {
    const r = await http("POST", "/users", { name, password: PASSWORD, tenantId, roles: [role] });
    expect(r.status, r.text).toBe(201);
  }
  await http("POST", "/bridges", { name: "ours", tenantId: TENANT });
  await http("POST", "/bridges", { name: "theirs", tenantId: OTHER });
  ({ context: admin, page } = await loggedIn("admin", fx.stack.adminPassword));
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await browser?.close();
});

describe("the page at /", () => {
  it("is the console for a browser, with a strict Content-Security-Policy; an API client still gets the root document", async () => {
    const html = await fetch(`${fx.gw}/`, { headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" } });
    expect(html.status).toBe(200);
    expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = html.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).toContain("frame-ancestors 'none'");
    const text = await html.text();
    expect(text).toContain('<html lang="en">');
    expect(text).not.toMatch(/<script>|<script(?![^>]*\bsrc=)[^>]*>/);
    // curl, the CLI and any client naming JSON keep the API's answers.
    for (const accept of [undefined, "*/*", "application/json", "application/vnd.org.service.Application-v5+json, text/html;q=0.5"]) {
      const r = await http("GET", "/", undefined, accept ? { accept } : {});
      expect(r.status, `${accept}: ${r.text}`).toBe(200);
      expect(r.json.bridges).toBe(`${fx.gw}/bridges`);
    }
    const anonymous = await fetch(`${fx.gw}/`, { headers: { accept: "application/json" } });
    expect(anonymous.status).toBe(401);
  });

  it("serves the bundle gzip-coded, under 300 KB", async () => {
    const html = await (await fetch(`${fx.gw}/`, { headers: { accept: "text/html" } })).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(0);
    let total = 0;
    for (const a of assets) {
      const r = await fetch(`${fx.gw}${a}`, { headers: { "accept-encoding": "gzip" }, decompress: false } as RequestInit);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-encoding")).toBe("gzip");
      total += Number(r.headers.get("content-length"));
    }
    console.log(`console bundle, gzip: ${(total / 1024).toFixed(1)} KB`);
    expect(total).toBeLessThan(300 * 1024);
    expect((await fetch(`${fx.gw}/console/assets/none.js`)).status).toBe(404);
  });
});

describe("as an administrator", () => {
  it("the bridges page becomes interactive quickly; the navigation names every top-level kind as a person reads it", async () => {
    // A new navigation (the session is this tab's: it outlives a reload).
    await page.goto(`${fx.gw}/#/list/bridge.Bridge`);
    await page.reload();
    await page.locator("tbody tr").first().waitFor();
    const ms = (await page.evaluate("performance.now()")) as number;
    console.log(`bridges page: navigation start to the list rendered ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(10_000);
    const nav = page.getByRole("navigation", { name: "Kinds" });
    for (const name of ["Bridges", "Load balancers", "Tunnel zones", "VTEPs", "QoS policies", "Users"]) await expect(nav.getByRole("link", { name, exact: true }).count()).resolves.toBe(1);
    // Child kinds are reached from their parent, not from the navigation.
    expect(await nav.getByRole("link", { name: "DHCP subnets" }).count()).toBe(0);
  });

  it("creates a bridge from the form: the API's violations beside their fields, markup in a name shown as text", async () => {
    await page.goto(`${fx.gw}/#/list/bridge.Bridge`);
    await page.getByRole("link", { name: "New bridge" }).click();
    await page.getByRole("heading", { name: "New bridge" }).waitFor();
    // Every field has a label; the default comes from the service (adminStateUp: true).
    await expect(page.getByLabel("Admin state up").isChecked()).resolves.toBe(true);
    const name = `<img src=x onerror="document.title='pwned'">\u001b[31m blue`;
    await page.getByLabel("Name").fill(name);
    await page.getByLabel("Inbound filter ID").fill("not-a-uuid");
    await page.getByRole("button", { name: "Create" }).click();
    const error = page.locator("#field-inboundFilterId-error");
    await error.waitFor();
    expect(await error.textContent()).toMatch(/uuid/i);
    await expect(page.getByLabel("Inbound filter ID").getAttribute("aria-invalid")).resolves.toBe("true");
    await shot(page, "form-violation");
    await page.getByLabel("Inbound filter ID").fill("");
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("heading", { level: 1, name: /Bridge/ }).filter({ hasText: "blue" }).waitFor();
    expect(await page.locator("h1 .item-name").textContent()).toBe(name);
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.title()).not.toBe("pwned");
  });

  it("an edit of an item changed meanwhile is refused (412): the form says so, keeps what was typed and shows the current values", async () => {
    const created = await http("POST", "/bridges", { name: "edit-me" });
    await page.goto(`${fx.gw}/#/edit/bridge.Bridge/${encodeURIComponent(`/bridges/${created.json.id}`)}`);
    await poll(() => page.getByLabel("Name").inputValue()).toBe("edit-me");
    // Someone else renames it.
    expect((await http("PUT", `/bridges/${created.json.id}`, { name: "renamed-elsewhere" })).status).toBe(200);
    await page.getByLabel("Name").fill("my-change");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("changed by someone else").waitFor();
    // What the person typed stays (issue 55); the item's current name is shown beside it.
    expect(await page.getByLabel("Name").inputValue()).toBe("my-change");
    await page.getByRole("cell", { name: "renamed-elsewhere" }).waitFor();
    await shot(page, "edit-conflict");
    // Saved again, it goes through (the form now holds the current ETag).
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("h1 .item-name", { hasText: "my-change" }).waitFor();
    expect((await http("GET", `/bridges/${created.json.id}`)).json.name).toBe("my-change");
  });

  it("a child kind: a bridge's DHCP subnets, created on the bridge's page, and a subnet's hosts on its own", async () => {
    const bridge = await http("POST", "/bridges", { name: "with-subnets" });
    await page.goto(`${fx.gw}/#/item/bridge.Bridge/${encodeURIComponent(`/bridges/${bridge.json.id}`)}`);
    await page.getByRole("heading", { name: "DHCP subnets" }).waitFor();
    await page.getByRole("link", { name: "New DHCP subnet" }).click();
    await page.getByLabel("Subnet prefix").fill("10.1.0.0");
    await page.getByLabel("Subnet length").fill("24");
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("heading", { name: "DHCP hosts" }).waitFor();
    expect(await page.getByRole("link", { name: "← Bridge" }).count()).toBe(1);
    await page.getByRole("link", { name: "New DHCP host" }).click();
    await page.getByLabel("MAC address").fill("02:00:00:00:00:01");
    await page.getByLabel("IP address").fill("10.1.0.5");
    await page.getByRole("textbox", { name: "Name", exact: true }).fill("host-one");
    await page.getByRole("button", { name: "Create" }).click();
    await page.locator("h1 .item-name", { hasText: "host-one" }).waitFor();
    const hosts = await http("GET", `/bridges/${bridge.json.id}/dhcp/10.1.0.0_24/hosts`);
    expect(hosts.json.map((h: { name: string }) => h.name)).toEqual(["host-one"]);
    await page.goto(`${fx.gw}/#/item/bridge.Bridge/${encodeURIComponent(`/bridges/${bridge.json.id}`)}`);
    await row(page, "10.1.0.0").waitFor();
    await shot(page, "bridge");
  });

  it("offers the values a field allows: a tunnel zone's type from a list, a user's roles as checkboxes", async () => {
    await page.goto(`${fx.gw}/#/new/tunnel.TunnelZone`);
    const type = page.getByLabel("Type");
    expect(await type.locator("option").allTextContents()).toEqual(["—", "gre", "vxlan", "vtep"]);
    await type.selectOption("vxlan");
    await page.getByLabel("Name").fill(`zone-form-${fx.stack.id}`);
    await page.getByRole("button", { name: "Create" }).click();
    await page.locator("h1 .item-name", { hasText: `zone-form-${fx.stack.id}` }).waitFor();
    expect(await page.locator(".fields > div", { hasText: "Type" }).locator("dd").textContent()).toBe("vxlan");
    await page.goto(`${fx.gw}/#/new/identity.User`);
    const roles = page.getByRole("group", { name: "Roles" });
    expect(await roles.getByRole("checkbox").count()).toBe(3);
    await page.getByRole("textbox", { name: "Name", exact: true }).fill(`viewer-${fx.stack.id}`);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByLabel("Tenant ID").fill(TENANT);
    await roles.getByLabel("tenant_user").check();
    await page.getByRole("button", { name: "Create" }).click();
    await page.locator("h1 .item-name", { hasText: `viewer-${fx.stack.id}` }).waitFor();
    expect(await page.locator(".fields > div", { hasText: "Roles" }).locator("dd").textContent()).toBe("tenant_user");
  });

  it("deletes from a row after a confirmation naming what goes with it", async () => {
    const bridge = await http("POST", "/bridges", { name: "doomed" });
    await http("POST", `/bridges/${bridge.json.id}/dhcp`, { subnetPrefix: "10.2.0.0", subnetLength: 24 });
    await page.goto(`${fx.gw}/#/list/bridge.Bridge`);
    await row(page, "doomed").getByRole("button", { name: "Delete doomed" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain("DHCP subnets");
    expect(await dialog.textContent()).toContain("DHCP hosts");
    expect(await axeViolations(page), "the delete dialog").toEqual([]);
    await shot(page, "delete");
    await dialog.getByRole("button", { name: "Delete" }).click();
    await row(page, "doomed").waitFor({ state: "detached" });
    expect((await http("GET", `/bridges/${bridge.json.id}`)).status).toBe(404);
    expect((await http("GET", `/bridges/${bridge.json.id}/dhcp`)).status).toBe(404);
  });

  it("follows the change feed: a bridge created through the API appears, a deleted one goes", async () => {
    await page.goto(`${fx.gw}/#/list/bridge.Bridge`);
    await page.getByText("Live", { exact: true }).waitFor();
    const name = `live-${randomBytes(3).toString("hex")}`;
    const created = await http("POST", "/bridges", { name });
    await row(page, name).waitFor({ timeout: 5_000 });
    await shot(page, "bridges");
    await http("DELETE", `/bridges/${created.json.id}`);
    await row(page, name).waitFor({ state: "detached", timeout: 5_000 });
  });

  it("pages through a long list with the API's paging", async () => {
    const tenant = `paged-${fx.stack.id}`;
    for (let i = 0; i < 23; i++) await http("POST", "/bridges", { name: `p${String(i).padStart(2, "0")}`, tenantId: tenant });
    await page.goto(`${fx.gw}/#/list/bridge.Bridge`);
    await page.getByLabel("Tenant").fill(tenant);
    // The filter applies once typing pauses: then every row is the tenant's.
    const rows = () => page.locator("tbody tr").allTextContents();
    await poll(async () => (await rows()).filter((t) => t.includes(tenant)).length).toBe(20);
    expect((await rows()).length).toBe(20);
    await page.getByRole("button", { name: "Next page" }).click();
    await poll(() => page.locator("tbody tr").count()).toBe(3);
    await page.getByRole("button", { name: "Previous page" }).click();
    await poll(() => page.locator("tbody tr").count()).toBe(20);
    // The name is the API's filter: a name on the second page is found from the first.
    await page.getByLabel("Name is").fill("p21");
    await poll(() => page.locator("tbody tr").allTextContents()).toEqual([expect.stringContaining("p21")]);
  });

  it("a VTEP's page shows its connection state and ports as they change", async () => {
    const device = await OvsdbServer.create();
    try {
      device.ctl("add-ps", "sw-console");
      device.ctl("set", "Physical_Switch", "sw-console", "management_ips=127.0.0.1");
      device.ctl("add-port", "sw-console", "eth0");
      const zone = await http("POST", "/tunnel_zones", { name: `zone-${fx.stack.id}`, type: "vtep" });
      const vtep = await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: zone.json.id });
      expect(vtep.status, vtep.text).toBe(201);
      await page.goto(`${fx.gw}/#/item/tunnel.Vtep/${encodeURIComponent(`/vteps/${vtep.json.id}`)}`);
      const state = page.locator(".fields > div", { hasText: "Connection state" }).locator("dd");
      await poll(() => state.textContent()).toBe("connected");
      const ports = page.getByRole("region", { name: "Ports" });
      await ports.getByRole("cell", { name: "eth0", exact: true }).waitFor();
      device.ctl("add-port", "sw-console", "eth7");
      await ports.getByRole("cell", { name: "eth7", exact: true }).waitFor({ timeout: 5_000 });
      await shot(page, "vtep");
      await device.stop();
      await expect.poll(() => state.textContent(), { timeout: 20_000 }).toBe("disconnected");
    } finally {
      await device.destroy();
    }
  });

  it("a VTEP's page shows its bindings, the MACs its device learns as it learns them, and why it is in error", async () => {
    const device = await OvsdbServer.create();
    try {
      device.ctl("add-ps", "sw-vx");
      device.ctl("set", "Physical_Switch", "sw-vx", "management_ips=127.0.0.1");
      device.ctl("add-port", "sw-vx", "eth0");
      const zone = await http("POST", "/tunnel_zones", { name: `vzone-${fx.stack.id}`, type: "vtep" });
      const vtep = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: zone.json.id })).json;
      const bridge = (await http("POST", "/bridges", { name: "vx", tenantId: TENANT })).json;
      await waitFor("the device's port", async () => (await http("GET", `${vtep.uri}/ports`)).json.length === 1, 15_000);
      const binding = await http("POST", `${vtep.uri}/bindings`, { portName: "eth0", vlanId: 5, networkId: bridge.id });
      expect(binding.status, binding.text).toBe(201);
      await waitFor("the VXLAN port", async () => (await http("GET", bridge.uri)).json.vxlanPortIds.length === 1, 10_000);
      await page.goto(`${fx.gw}/#/item/tunnel.Vtep/${encodeURIComponent(`/vteps/${vtep.id}`)}`);
      await page.getByRole("region", { name: "Bindings" }).getByRole("cell", { name: bridge.id, exact: true }).waitFor();
      const learned = page.getByRole("region", { name: "Learned MACs" });
      // The device is programmed in its own transaction after the binding's 201: a MAC can only be
      // learned on a logical switch the device already has.
      await waitFor("the device's logical switch", async () => device.ctl("list-ls").split("\n").includes(`mn-${bridge.id}`), 10_000);
      device.ctl("add-ucast-local", `mn-${bridge.id}`, "00:AA:BB:CC:DD:01", "10.0.0.9");
      await learned.getByRole("row").filter({ hasText: "00:aa:bb:cc:dd:01" }).getByRole("link", { name: bridge.id }).waitFor({ timeout: 5_000 });
      device.ctl("set", "Ucast_Macs_Local", device.ctl("--bare", "--columns=_uuid", "list", "Ucast_Macs_Local").trim(), "ipaddr=10.1.2.3");
      await learned.getByRole("cell", { name: "10.1.2.3", exact: true }).waitFor({ timeout: 5_000 });
      await shot(page, "vtep-bindings");
      // Its switch no longer names the VTEP's address: in error, and the page says why.
      device.ctl("set", "Physical_Switch", "sw-vx", "management_ips=192.0.2.1");
      await poll(() => page.getByRole("alert").filter({ hasText: "In error" }).textContent()).toBe(
        "In error: the device has no Physical_Switch whose management_ips hold 127.0.0.1",
      );
      expect((await http("DELETE", binding.json.uri)).status).toBe(204);
      await waitFor("unbound", async () => (await http("GET", bridge.uri)).json.vxlanPortIds.length === 0, 10_000);
      expect((await http("DELETE", vtep.uri)).status).toBe(204);
    } finally {
      await device.destroy();
    }
  });

  it("has no serious or critical accessibility violation (axe-core) on its pages", async () => {
    const bridge = await http("POST", "/bridges", { name: "axe" });
    const chain = await http("POST", "/chains", { name: "axe" });
    const pages: [string, string][] = [
      ["#/list/bridge.Bridge", "tbody tr"],
      ["#/new/bridge.Bridge", "form input"],
      [`#/item/bridge.Bridge/${encodeURIComponent(`/bridges/${bridge.json.id}`)}`, "dl.fields"],
      ["#/list/tunnel.Vtep", "table"],
      ["#/new/identity.User", "fieldset"],
      // A rule's form in groups, a type's own fields shown (set below).
      [`#/new/policy.Rule/${encodeURIComponent(`/chains/${chain.json.id}`)}`, "fieldset.group"],
    ];
    for (const [p, ready] of pages) {
      await page.goto(`${fx.gw}/${p}`);
      await page.locator(ready).first().waitFor();
      if (p.includes("policy.Rule")) await page.getByRole("combobox", { name: "Type" }).selectOption("dnat");
      expect(await axeViolations(page), p).toEqual([]);
    }
    const fresh = await browser.newPage();
    await fresh.goto(`${fx.gw}/`);
    await fresh.getByLabel("User name").waitFor();
    expect(await axeViolations(fresh), "login").toEqual([]);
    await shot(fresh, "login");
    await fresh.close();
  }, 60_000);
});

describe("as a tenant's users", () => {
  it("a tenant administrator sees its tenant's bridges only, and no kind only administrators use", async () => {
    const { context, page: p } = await loggedIn(`ta-${fx.stack.id}`, PASSWORD);
    await row(p, "ours").waitFor();
    expect(await row(p, "theirs").count()).toBe(0);
    const nav = p.getByRole("navigation", { name: "Kinds" });
    expect(await nav.getByRole("link", { name: "Bridges" }).count()).toBe(1);
    for (const adminOnly of ["Users", "VTEPs", "Tunnel zones", "Load balancers"]) expect(await nav.getByRole("link", { name: adminOnly, exact: true }).count()).toBe(0);
    // Its creations are its tenant's.
    await p.getByRole("link", { name: "New bridge" }).click();
    await poll(() => p.getByLabel("Tenant ID").inputValue()).toBe(TENANT);
    await p.getByLabel("Name").fill("made-by-tenant");
    await p.getByRole("button", { name: "Create" }).click();
    await p.locator("h1 .item-name", { hasText: "made-by-tenant" }).waitFor();
    await context.close();
  });

  it("a tenant user reads only: no create, edit or delete", async () => {
    const { context, page: p } = await loggedIn(`tu-${fx.stack.id}`, PASSWORD);
    await row(p, "ours").waitFor();
    expect(await p.getByRole("link", { name: "New bridge" }).count()).toBe(0);
    expect(await row(p, "ours").getByRole("button", { name: /Delete/ }).count()).toBe(0);
    await context.close();
  });

  it("works on a 390 px phone: the navigation behind a Menu button, rows as cards; logging out ends the token", async () => {
    const { context, page: p } = await loggedIn(`ta-${fx.stack.id}`, PASSWORD, { width: 390, height: 844 });
    await row(p, "ours").waitFor();
    const nav = p.getByRole("navigation", { name: "Kinds" });
    expect(await nav.isVisible()).toBe(false);
    // Nothing wider than the screen.
    expect(await p.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    await shot(p, "phone");
    await p.getByRole("button", { name: "Menu" }).click();
    expect(await nav.isVisible()).toBe(true);
    await shot(p, "phone-menu");
    const token = (await p.evaluate("sessionStorage.getItem('vnm.session')")) as string | null;
    expect(await p.evaluate("document.cookie")).toBe("");
    await p.getByRole("button", { name: "Log out", exact: true }).click();
    await p.getByLabel("User name").waitFor();
    expect((await p.evaluate("sessionStorage.getItem('vnm.session')")) as string | null).toBeNull();
    await waitFor("the token revoked", async () => (await http("GET", "/bridges", undefined, { "x-auth-token": token! })).status === 401, 5_000);
    await context.close();
  });
});

describe("when the gateway restarts", () => {
  it("the open list resumes the change feed with Last-Event-ID: a bridge created meanwhile appears", async () => {
    // A tenant of its own: the list's first page has room for what is created.
    const tenantId = `restart-${fx.stack.id}`;
    await page.goto(`${fx.gw}/#/list/bridge.Bridge`);
    await page.getByLabel("Tenant").fill(tenantId);
    await page.getByText("No bridges.").waitFor();
    await page.getByText("Live", { exact: true }).waitFor();
    // An event received first: the feed knows where to resume.
    const before = `before-${randomBytes(3).toString("hex")}`;
    await http("POST", "/bridges", { name: before, tenantId });
    await row(page, before).waitFor();
    const resumedAfter: string[] = [];
    page.on("request", (r) => {
      const id = r.headers()["last-event-id"];
      if (new URL(r.url()).pathname === "/events" && id) resumedAfter.push(id);
    });
    await fx.stack.stopGateway(fx.gw);
    await page.getByText("Reconnecting…").waitFor();
    // Meanwhile, through another gateway of the same system.
    const other = await fx.stack.startGateway();
    const name = `while-away-${randomBytes(3).toString("hex")}`;
    expect((await http("POST", `${other}/bridges`, { name, tenantId })).status).toBe(201);
    await fx.stack.restartGateway(fx.gw);
    await page.getByText("Live", { exact: true }).waitFor({ timeout: 15_000 });
    await row(page, name).waitFor({ timeout: 10_000 });
    expect(resumedAfter.length).toBeGreaterThan(0);
    expect(resumedAfter.every((id) => /^\d+$/.test(id))).toBe(true);
  }, 120_000);
});
