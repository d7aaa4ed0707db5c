// Pages and files the gateway serves from memory to browsers (the web console, the API
// reference): each kept with its gzip coding, sent under a same-origin Content-Security-Policy.
import { gzipSync } from "node:zlib";
import type { ApiRequest, ApiResponse } from "./context.ts";
import { acceptsGzip } from "./media.ts";

export interface StaticFile {
  type: string;
  body: Buffer;
  /** Its gzip coding, for text worth compressing. */
  gzip?: Buffer;
}

/** A file kept in memory, coded once (text of more than 512 bytes) for the clients that take gzip. */
export function staticFile(type: string, body: Buffer): StaticFile {
  return { type, body, gzip: /text|javascript|json|svg/.test(type) && body.length > 512 ? gzipSync(body, { level: 9 }) : undefined };
}

/**
 * A page that loads nothing but its own origin's scripts, styles, images, fonts and requests,
 * runs no inline script and is framed nowhere; `formAction`: where its forms may be sent.
 */
export function sameOriginPolicy(formAction: "'self'" | "'none'"): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    `form-action ${formAction}`,
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Sends a file (gzip-coded when the client takes it), its body left out for a HEAD. `vary`: what else the answer depends on. */
export function sendStatic(req: ApiRequest, res: ApiResponse, status: number, file: StaticFile, opts: { cache: string; policy: string; vary: string }): void {
  const gzip = file.gzip !== undefined && acceptsGzip(req.headers["accept-encoding"]);
  const body = gzip ? file.gzip! : file.body;
  const headers = [
    "Content-Type", file.type,
    "Content-Length", String(body.length),
    "Cache-Control", opts.cache,
    "Content-Security-Policy", opts.policy,
    "X-Content-Type-Options", "nosniff",
    "Referrer-Policy", "no-referrer",
    "Vary", opts.vary,
  ];
  if (gzip) headers.push("Content-Encoding", "gzip");
  res.writeHead(status, headers);
  res.end(req.method === "HEAD" ? undefined : body);
}
