// Stoplight Prism as a validating proxy in front of a gateway (issue 50, "OpenAPI tells the
// truth"): every request goes through it to the gateway unchanged, and every answer comes back
// with Prism's verdict on the request and on the answer against the OpenAPI document, read from
// its `sl-violations` header. Without --errors Prism forwards even a request it finds invalid,
// so a test sees both what the document says of a request and what the server did with it.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { freePort } from "@vnm/kit/testing";

/** One finding of Prism's: where (`request.body.name`, `response.header.ETag`), how bad, what. */
export interface Violation {
  location: string[];
  severity: string;
  code?: string | number;
  message: string;
}

export interface ProxyAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The body as JSON, or undefined when it is not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: an answer's JSON is read field by field by the tests
  json: any;
  /** Prism's findings on the request, and on the answer. */
  request: Violation[];
  response: Violation[];
}

export interface ProxyRequest {
  headers?: Record<string, string>;
  /** Sent as written (a string), or as JSON. */
  body?: unknown;
}

/** How long Prism may take to read the document and listen. */
const STARTUP_MS = 30_000;

/** The verdict of one answer's `sl-violations` header (absent: no finding). */
export function violationsOf(header: string | null): Violation[] {
  if (!header) return [];
  // Prism cuts a header over 8 KiB and says so: the cut list is still findings.
  if (!header.startsWith("[")) return [{ location: ["request"], severity: "Error", message: header.slice(0, 500) }];
  return JSON.parse(header) as Violation[];
}

/** A JSON.parse reviver keeping an integer beyond 2^53 as its digits (a double would round it). */
function keepBigIntegers(_key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value) && context?.source ? context.source : value;
}

export class PrismProxy {
  private readonly dir = mkdtempSync(join(tmpdir(), "vnm-prism-"));
  private proc: ChildProcess | undefined;
  private output = "";
  base = "";

  /** Starts Prism's proxy for `document` (the OpenAPI text) in front of `upstream`; resolves once it listens. */
  static async start(document: string, upstream: string): Promise<PrismProxy> {
    const p = new PrismProxy();
    const file = join(p.dir, "openapi.json");
    writeFileSync(file, document);
    const port = await freePort();
    const require = createRequire(import.meta.url);
    const pkg = require.resolve("@stoplight/prism-cli/package.json");
    const bin = (JSON.parse(readFileSync(pkg, "utf8")) as { bin: { prism: string } }).bin.prism;
    p.proc = spawn(process.execPath, [join(dirname(pkg), bin), "proxy", file, upstream, "--host", "127.0.0.1", "--port", String(port)], { stdio: ["ignore", "pipe", "pipe"] });
    const listening = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Prism did not start in ${STARTUP_MS} ms: ${p.output.slice(-2000)}`)), STARTUP_MS);
      const read = (chunk: Buffer) => {
        p.output = (p.output + chunk.toString()).slice(-20_000);
        if (p.output.includes("Prism is listening")) {
          clearTimeout(timer);
          resolve();
        }
      };
      p.proc!.stdout!.on("data", read);
      p.proc!.stderr!.on("data", read);
      p.proc!.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`Prism exited (${code}): ${p.output.slice(-2000)}`));
      });
    });
    await listening;
    p.base = `http://127.0.0.1:${port}`;
    return p;
  }

  /** One request through the proxy; the answer with Prism's findings. */
  async send(method: string, path: string, req: ProxyRequest = {}): Promise<ProxyAnswer> {
    const body = req.body === undefined ? undefined : typeof req.body === "string" ? req.body : JSON.stringify(req.body);
    const r = await fetch(`${this.base}${path}`, { method, headers: req.headers, body });
    const text = await r.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text, keepBigIntegers) : undefined;
    } catch {
      json = undefined;
    }
    const all = violationsOf(r.headers.get("sl-violations"));
    return { status: r.status, headers: r.headers, text, json, request: all.filter((v) => v.location[0] === "request"), response: all.filter((v) => v.location[0] !== "request") };
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (proc && proc.exitCode === null) {
      const exited = new Promise((resolve) => proc.once("exit", resolve));
      proc.kill("SIGTERM");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
