// HTTP to the gateway: the token of the context only when the gateway is the one that issued it,
// JSON with exact 64-bit integers, and the exit statuses: 1 when the API refuses (its message and
// each violation, one per line), 3 when the gateway cannot be reached.
import { CliError } from "./errors.ts";
import { parseExact, toJson } from "./json.ts";
import { clean } from "./text.ts";
import type { Target } from "./config.ts";
import { isRecord, memberOf, messageOf, stringMember } from "@vnm/kit/values";

/** The error body as one line, then each violation on its own line. */
function refusal(status: number, text: string, url: string, authenticated: boolean): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    /* not the error body */
  }
  const violations = memberOf(body, "violations");
  const lines = [`error ${status}: ${clean(stringMember(body, "message") ?? (text.slice(0, 200) || "no message"))}`];
  for (const v of Array.isArray(violations) ? violations : []) lines.push(`  ${clean(String(memberOf(v, "property")))}: ${clean(String(memberOf(v, "message")))}`);
  if (status === 401 && !authenticated) lines[0] += ` (not logged in to ${url}: vnm login)`;
  return lines.join("\n");
}

export interface Answer {
  status: number;
  headers: Headers;
  /** The parsed JSON body, if any. */
  body: unknown;
}

/** An answer that must be one object (an item, a root document, a login); exit 1 otherwise. */
export function objectOf(a: Answer): Record<string, unknown> {
  if (!isRecord(a.body)) throw new CliError(`error ${a.status}: the gateway's answer is not a JSON object`, 1, a.status);
  return a.body;
}

/** An answer that must be a list of objects (a collection); exit 1 otherwise. */
export function itemsOf(a: Answer): Record<string, unknown>[] {
  const body: unknown = a.body;
  const items: unknown[] = Array.isArray(body) ? body : [undefined];
  if (!items.every(isRecord)) throw new CliError(`error ${a.status}: the gateway's answer is not a list of objects`, 1, a.status);
  return items;
}

export class Api {
  readonly url: string;
  readonly token: string | undefined;

  constructor(t: Target) {
    this.url = t.url;
    this.token = t.token;
  }

  /** The raw response of a request (an absolute URL must be this gateway's). */
  async fetch(method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
    const url = path.startsWith("http") ? path : `${this.url}${path}`;
    if (!url.startsWith(`${this.url}/`) && url !== this.url) throw new CliError(`${url} is not at ${this.url}`, 1);
    const headers: Record<string, string> = { accept: "application/json", ...init.headers };
    if (this.token && !headers["authorization"]) headers["x-auth-token"] = this.token;
    let body: string | undefined;
    if (init.body !== undefined) {
      headers["content-type"] = "application/json";
      body = typeof init.body === "string" ? init.body : toJson(init.body);
    }
    let res: Response;
    try {
      // Redirects are not followed: a header such as X-Auth-Token would go along to wherever
      // they lead.
      res = await fetch(url, { method, headers, body, signal: init.signal, redirect: "manual" });
    } catch (err) {
      if (memberOf(err, "name") === "AbortError") throw err;
      const cause = stringMember(memberOf(err, "cause"), "message") ?? messageOf(err);
      throw new CliError(`cannot reach the gateway at ${this.url}: ${cause}`, 3);
    }
    if (res.status >= 300 && res.status < 400) {
      const to = res.headers.get("location") ?? "nowhere";
      throw new CliError(`error ${res.status}: ${this.url} redirects to ${clean(to)}; vnm does not follow (its token is for ${this.url} only)`, 1, res.status);
    }
    if (res.status >= 400) throw new CliError(refusal(res.status, await res.text(), this.url, this.token !== undefined || headers["authorization"] !== undefined), 1, res.status);
    return res;
  }

  /** A request whose answer is JSON (or empty). */
  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await this.fetch(method, path, { body, headers });
    const text = await res.text();
    let parsed: unknown;
    if (text) {
      try {
        parsed = parseExact(text);
      } catch {
        throw new CliError(`the gateway at ${this.url} answered ${method} ${path} with something other than JSON`, 1);
      }
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }
}
