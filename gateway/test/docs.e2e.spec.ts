// GET /docs: the API reference a person reads, with no token, from the gateway alone (no CDN),
// under a strict Content-Security-Policy; rendered in a real browser (Debian's chromium, driven
// by playwright-core) without a refused script, style or request.
import { existsSync } from "node:fs";
import { get, type IncomingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_TYPE, Stack } from "@vnm/e2e/harness";

const CHROMIUM = "/usr/bin/chromium";
const stack = new Stack();
let gw = "";

beforeAll(async () => {
  await stack.startServices("identity");
  gw = await stack.startGateway({}, false);
}, 120_000);

afterAll(async () => {
  await stack.stop();
});

/** The files a page names in its src and href attributes. */
const referenced = (html: string) => [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);

describe("GET /docs", () => {
  it("serves the reference page and every file it loads without a token, from this gateway", async () => {
    const page = await fetch(`${gw}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|\son\w+=/);
    const files = referenced(html);
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const f of files) {
      expect(f, "a file of this gateway, not a CDN's").toMatch(/^\/docs\//);
      const r = await fetch(gw + f);
      expect(r.status, f).toBe(200);
      expect((await r.arrayBuffer()).byteLength, f).toBeGreaterThan(0);
    }
    expect((await fetch(`${gw}/docs/`)).status).toBe(200);
    // The description it renders needs no token either.
    expect((await fetch(`${gw}/openapi.json`)).status).toBe(200);
  });

  it("gzips its files for clients that take gzip", async () => {
    const coded = await rawGet(`${gw}/docs/swagger-ui-bundle.js`, { "accept-encoding": "gzip" });
    expect(coded.headers["content-encoding"]).toBe("gzip");
    expect(coded.headers["content-type"]).toMatch(/^text\/javascript/);
    const plain = await rawGet(`${gw}/docs/swagger-ui-bundle.js`, {});
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.byteLength).toBeGreaterThan(100_000);
    expect(coded.body.byteLength).toBeLessThan(plain.body.byteLength / 2);
    expect(gunzipSync(coded.body).equals(plain.body)).toBe(true);
  });

  it("answers a file it does not have with 404 and the error body", async () => {
    // Only the files the page uses: nothing else of the package, nor of the machine.
    const r = await fetch(`${gw}/docs/package.json`);
    expect(r.status).toBe(404);
    expect(r.headers.get("content-type")).toContain(ERROR_TYPE);
    const n = await fetch(`${gw}/docs/index.css`);
    expect(n.status).toBe(404);
  });

  describe.skipIf(!existsSync(CHROMIUM))("in a browser", () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
      });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    it("renders every operation's summary, with nothing refused by the policy and no request elsewhere", async () => {
      const page = await browser.newPage();
      const problems: string[] = [];
      const elsewhere: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error" || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
      });
      page.on("pageerror", (e) => problems.push(e.message));
      page.on("requestfailed", (r) => problems.push(`${r.url()} failed`));
      page.on("request", (r) => {
        if (!r.url().startsWith(gw) && !r.url().startsWith("data:")) elsewhere.push(r.url());
      });
      await page.goto(`${gw}/docs`);
      await page.getByText("Get the root document", { exact: true }).first().waitFor({ timeout: 20_000 });
      // Swagger UI renders the operations as they scroll into view (a virtual list): scroll to each.
      const reach = async (text: string) => {
        for (let i = 0; i < 200 && (await page.getByText(text, { exact: true }).count()) === 0; i++) await page.mouse.wheel(0, 400);
        await page.getByText(text, { exact: true }).first().waitFor({ timeout: 5_000 });
      };
      await reach("List bridges");
      // An operation opens with its example body.
      await page.getByText("Create a bridge", { exact: true }).first().click();
      await page.getByText('"tenantId": "acme"').first().waitFor({ timeout: 10_000 });
      await reach("Create a DHCP subnet on a bridge");
      expect(problems).toEqual([]);
      expect(elsewhere).toEqual([]);
      await page.close();
    }, 60_000);
  });
});

/** A GET whose body is kept as it came (fetch would decode it). */
function rawGet(url: string, headers: Record<string, string>): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    }).on("error", reject);
  });
}
