// A tenant's quota page in the console (issue 54): the tenant's own user sees each collection's
// usage against its limit (a full one marked), follows a delete elsewhere within seconds, and the
// page passes axe. The console as `npm test` built it (console/dist), in Debian's Chromium.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpClient, Stack } from "@vnm/e2e/harness";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const PASSWORD = `pw-${randomBytes(9).toString("hex")}`;
const TENANT = `acme-${stack.id}`;
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const CHROMIUM = "/usr/bin/chromium";
let browser: Browser;
let page: Page;
const bridges: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
  await stack.startServices("identity", "bridge", "routing", "quota");
  gw = await stack.startGateway({}, false);
  const user = await http("POST", "/users", { name: `tu-${stack.id}`, password: PASSWORD, tenantId: TENANT, roles: ["tenant_user"] });
  expect(user.status, user.text).toBe(201);
  expect((await http("PUT", `/quotas/${TENANT}`, { limits: { bridges: 2, routers: 5 } })).status).toBe(200);
  for (const name of ["b1", "b2"]) {
    const b = await http("POST", "/bridges", { name, tenantId: TENANT });
    expect(b.status, b.text).toBe(201);
    bridges.push(b.json.id);
  }
  expect((await http("POST", "/routers", { name: "r1", tenantId: TENANT })).status).toBe(201);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(10_000);
  page = await context.newPage();
  await page.goto(`${gw}/`);
  await page.getByLabel("User name").fill(`tu-${stack.id}`);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("button", { name: "Log out", exact: true }).waitFor();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack.stop();
});

const usage = (collection: string) => page.locator(`tr[data-collection="${collection}"]`);

describe("a tenant's quota page", () => {
  it("shows the tenant's usage against each limit, a full one marked, and follows a delete made elsewhere", async () => {
    await page.goto(`${gw}/#/item/quota.Quota/${encodeURIComponent(`/quotas/${TENANT}`)}`);
    await page.getByRole("heading", { name: "Usage against limits" }).waitFor();
    await expect.poll(() => usage("bridges").textContent(), { timeout: 10_000 }).toContain("2 of 2: full");
    expect(await usage("bridges").getAttribute("class")).toBe("quota-full");
    expect(await usage("routers").textContent()).toContain("1 of 5");
    expect(await usage("chains").textContent()).toContain("0 (unlimited)");
    expect(await usage("bridges").getByRole("meter").getAttribute("value")).toBe("2");
    // A bridge deleted by the administrator: the page says so within seconds, the row no longer full.
    expect((await http("DELETE", `/bridges/${bridges[0]}`)).status).toBe(204);
    await expect.poll(() => usage("bridges").textContent(), { timeout: 10_000 }).toContain("1 of 2");
    expect(await usage("bridges").getAttribute("class")).toBeNull();
    await page.evaluate(AXE);
    const result = (await page.evaluate("axe.run().then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id))")) as string[];
    expect(result).toEqual([]);
  });
});
