// The console's handler over real HTTP: which requests it takes, the page's headers, gzip, and
// what a browser is told when the console is not built (the API goes on regardless).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, get, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createLogger } from "@vnm/kit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CONTENT_SECURITY_POLICY, consolePages } from "./console.ts";
import { type ApiRequest, type ApiResponse, asApiExchange } from "./context.ts";
import { Targets } from "./targets.ts";
import { JSON_TYPE } from "./media.ts";

const ROOT_TYPE = "application/vnd.org.service.Application-v5+json";
const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const dir = mkdtempSync(join(tmpdir(), "vnm-console-"));
let server: Server;
let base = "";

/** A GET accepting gzip, its body as sent (fetch would decode it). */
function gzipped(url: string): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { "accept-encoding": "gzip" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    }).on("error", reject);
  });
}

beforeAll(async () => {
  const ui = consolePages({ apiTypes: [ROOT_TYPE, JSON_TYPE], log: createLogger({ service: "test" }, "error"), dir });
  const targets = new Targets();
  server = createServer((req, res) => {
    asApiExchange(req, res, undefined, targets);
    if (!ui(req as ApiRequest, res as ApiResponse)) res.end("the API");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

it("unbuilt, / tells a browser how to build the console; API clients and other paths go to the API", async () => {
  const page = await fetch(`${base}/`, { headers: { accept: BROWSER } });
  expect(page.status).toBe(503);
  expect(page.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
  expect(await page.text()).toContain("npm run build -w console");
  for (const accept of ["*/*", "application/json", `${ROOT_TYPE}, text/html;q=0.9`]) {
    expect(await (await fetch(`${base}/`, { headers: { accept } })).text(), accept).toBe("the API");
  }
  expect(await (await fetch(`${base}/`)).text()).toBe("the API");
  expect(await (await fetch(`${base}/bridges`, { headers: { accept: BROWSER } })).text()).toBe("the API");
  expect(await (await fetch(`${base}/`, { method: "POST", headers: { accept: BROWSER } })).text()).toBe("the API");
});

it("built while the gateway runs, the page is found on the next request; its files are served gzip-coded", async () => {
  const script = `console.log(${JSON.stringify("x".repeat(2000))});`;
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "assets", "app-1.js"), script);
  writeFileSync(join(dir, "index.html"), '<!doctype html><html lang="en"><script type="module" src="/console/assets/app-1.js"></script></html>');
  const page = await fetch(`${base}/`, { headers: { accept: BROWSER } });
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(page.headers.get("cache-control")).toBe("no-cache");
  expect(await page.text()).toContain("app-1.js");
  const raw = await gzipped(`${base}/console/assets/app-1.js`);
  expect(raw.headers["content-encoding"]).toBe("gzip");
  expect(raw.headers["cache-control"]).toContain("immutable");
  expect(gunzipSync(raw.body).toString()).toBe(script);
  const plain = await fetch(`${base}/console/assets/app-1.js`, { headers: { "accept-encoding": "identity" } });
  expect(plain.headers.get("content-encoding")).toBeNull();
  expect(await plain.text()).toBe(script);
  const head = await fetch(`${base}/console/assets/app-1.js`, { method: "HEAD" });
  expect(head.status).toBe(200);
  expect(await head.text()).toBe("");
  const missing = await fetch(`${base}/console/assets/app-2.js`);
  expect(missing.status).toBe(404);
  expect(((await missing.json()) as { code: number }).code).toBe(404);
});
