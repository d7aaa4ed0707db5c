// The web console (console/, built by Vite into console/dist): its page at / for a browser (a
// request preferring text/html over the root document's media types), its files under
// /console/, from memory, gzip-coded when the client takes it. Everything else, and every API
// client at /, goes on to the API as before. The page carries a strict Content-Security-Policy:
// scripts, styles and connections from this origin only, no inline script, no framing.
// /favicon.ico answers the console's icon (an SVG) to anyone.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { extname, join, relative } from "node:path";
import { constants as H } from "node:http2";
import type { Logger } from "@vnm/kit";
import { ROOT } from "@vnm/kit/repo";
import type { ApiRequest, ApiResponse } from "./context.ts";
import { EdgeError, sendError } from "./http-error.ts";
import { negotiate } from "./media.ts";
import { sameOriginPolicy, sendStatic, type StaticFile, staticFile } from "./static-files.ts";

export const CONSOLE_DIR = join(ROOT, "console", "dist");
const HTML = "text/html";
const ASSETS = "/console/";
const FAVICON = "/favicon.ico";

export const CONTENT_SECURITY_POLICY = sameOriginPolicy("'self'");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
};

/** Every built file by its URL path (index.html as "/"), or undefined when nothing is built. */
function load(dir: string): Map<string, StaticFile> | undefined {
  if (!existsSync(join(dir, "index.html"))) return undefined;
  const files = new Map<string, StaticFile>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const full = join(e.parentPath, e.name);
    const file = staticFile(TYPES[extname(e.name)] ?? "application/octet-stream", readFileSync(full));
    const rel = relative(dir, full).split("\\").join("/");
    files.set(rel === "index.html" ? "/" : `${ASSETS}${rel}`, file);
  }
  return files;
}

const MISSING = Buffer.from(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vnm console: not built</title></head>
<body><main><h1>The console is not built</h1>
<p>This gateway serves the API, but the web console's files are missing. Build them in the
repository with <code>npm run build -w console</code> (<code>npm start</code> does it when they are
missing), then reload this page.</p></main></body></html>
`);

/** The page varies with Accept (a browser gets it, an API client the root document) as well as with Accept-Encoding. */
const send = (req: ApiRequest, res: ApiResponse, status: number, file: StaticFile, cache: string) =>
  sendStatic(req, res, status, file, { cache, policy: CONTENT_SECURITY_POLICY, vary: "Accept, Accept-Encoding" });

/**
 * The console's handler: true when it answered. `apiTypes` are the root document's media types:
 * `/` is the console's page only for a request that prefers text/html to all of them.
 */
export function consolePages(opts: { apiTypes: string[]; log: Logger; dir?: string }): (req: ApiRequest, res: ApiResponse) => boolean {
  const dir = opts.dir ?? CONSOLE_DIR;
  let files = load(dir);
  if (!files) opts.log.warn("the web console is not built: / answers browsers with how to build it", { dir });
  const offers = [...opts.apiTypes, HTML];
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    // The icon browsers ask for on their own: the console's, to anyone (it is no API answer, so no 401).
    if (req.path === FAVICON) {
      const icon = files?.get(`${ASSETS}favicon.svg`);
      if (!icon) return false;
      res.locals.route = FAVICON;
      send(req, res, H.HTTP_STATUS_OK, icon, "public, max-age=86400");
      return true;
    }
    const page = req.path === "/";
    if (page ? negotiate(req.headers.accept, offers) !== HTML : !req.path.startsWith(ASSETS)) return false;
    res.locals.route = page ? "/" : ASSETS;
    // Built while the gateway runs: found on the next request for the page.
    if (!files && page) files = load(dir);
    const file = files?.get(req.path);
    if (page) send(req, res, file ? H.HTTP_STATUS_OK : H.HTTP_STATUS_SERVICE_UNAVAILABLE, file ?? { type: TYPES[".html"]!, body: MISSING }, "no-cache");
    else if (file) send(req, res, H.HTTP_STATUS_OK, file, "public, max-age=31536000, immutable");
    else sendError(res, EdgeError.notFound(`There is no console file at ${req.path}`), res.locals.requestId, opts.log);
    return true;
  };
}
