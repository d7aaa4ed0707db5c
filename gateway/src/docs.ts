// GET /docs: the API reference, Swagger UI (the swagger-ui-dist package's own files, served from
// here: no CDN) rendering GET /openapi.json. No token is needed to read it; "Authorize" takes
// one (or the user name and password for POST /login) for "Try it out". A strict
// Content-Security-Policy: scripts, styles and requests from this origin only, no inline script.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { constants as H } from "node:http2";
import type express from "express";
import type { Logger } from "@vnm/kit";
import { EdgeError, sendError } from "./http-error.ts";
import { sameOriginPolicy, sendStatic, type StaticFile, staticFile } from "./static-files.ts";

const require = createRequire(import.meta.url);

/** What a page of /docs may load: its own origin's scripts, styles, images and requests. */
export const DOCS_CSP = sameOriginPolicy("'none'");

/** The files of swagger-ui-dist the page uses, by the name it asks for them. */
const PACKAGE_FILES: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>vnm API reference</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="stylesheet" href="/docs/docs.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs.js"></script>
</body>
</html>
`;

// No validator badge (it would send the description to a public service), no inline script.
const INIT = `window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  displayOperationId: false,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  persistAuthorization: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

const CSS = `body { margin: 0; }
#swagger-ui { max-width: 1200px; margin: 0 auto; padding: 0 16px; }
`;

/** Every file of /docs, read and compressed once, on first use. */
function assets(): Map<string, StaticFile> {
  const dir = dirname(require.resolve("swagger-ui-dist/package.json"));
  const out = new Map<string, StaticFile>();
  out.set("/docs", staticFile("text/html; charset=utf-8", Buffer.from(PAGE)));
  out.set("/docs/docs.js", staticFile("text/javascript; charset=utf-8", Buffer.from(INIT)));
  out.set("/docs/docs.css", staticFile("text/css; charset=utf-8", Buffer.from(CSS)));
  for (const [name, type] of Object.entries(PACKAGE_FILES)) out.set(`/docs/${name}`, staticFile(type, readFileSync(join(dir, name))));
  return out;
}

/** Whether a request's path belongs to /docs (served by express, without a token). */
export function isDocsPath(path: string): boolean {
  return path === "/docs" || path.startsWith("/docs/");
}

export function docsRoutes(app: express.Express, log: Logger): void {
  let files: Map<string, StaticFile> | undefined;
  app.get(/^\/docs(\/.*)?$/, (req, res) => {
    const path = req.path === "/docs/" || req.path === "/docs/index.html" ? "/docs" : req.path;
    files ??= assets();
    const file = files.get(path);
    if (!file) return sendError(res, EdgeError.notFound(`There is no file at ${req.path}`), res.locals.requestId, log);
    res.locals.route = "/docs";
    // The page and its files change with the gateway's version only; a browser may keep them a day.
    const cache = path === "/docs" ? "no-cache" : "public, max-age=86400";
    sendStatic(req, res, H.HTTP_STATUS_OK, file, { cache, policy: DOCS_CSP, vary: "Accept-Encoding" });
  });
}
