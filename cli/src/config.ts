// The CLI's configuration: $XDG_CONFIG_HOME/vnm/config.json (or ~/.config/vnm), mode 600. It
// names gateways as contexts, each with the token that gateway issued; one is current.
//
//   {"current": "prod", "contexts": {"prod": {"url": "https://vnm.example", "token": "..."}}}
//
// A token is only ever sent to the gateway that issued it: `--url` or VNM_URL naming another
// gateway than the context's sends that gateway's own token, if a context holds one, else none.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CliError } from "./errors.ts";
import { isRecord, messageOf, stringMember } from "@vnm/kit/values";

export interface Context {
  url?: string;
  /** The token, and the gateway that issued it. */
  token?: string;
  issuer?: string;
  user?: string;
}

export interface Config {
  current?: string;
  contexts: Record<string, Context>;
}

export const DEFAULT_URL = "http://127.0.0.1:8080";

export function configFile(): string {
  const base = process.env["XDG_CONFIG_HOME"] || join(homedir(), ".config");
  return join(base, "vnm", "config.json");
}

export function loadConfig(): Config {
  const f = configFile();
  if (!existsSync(f)) return { contexts: {} };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(f, "utf8"));
  } catch (err) {
    throw new CliError(`${f} is not valid JSON (${messageOf(err)}): fix or remove it`, 2);
  }
  if (!isRecord(raw)) throw new CliError(`${f} is not a JSON object: fix or remove it`, 2);
  // The single login of earlier versions: one context, named default.
  if (!raw["contexts"]) {
    const url = stringMember(raw, "url");
    return url ? { current: "default", contexts: { default: { url, token: stringMember(raw, "token"), issuer: url } } } : { contexts: {} };
  }
  const contexts = raw["contexts"];
  if (!isRecord(contexts)) throw new CliError(`${f}: contexts is not a JSON object: fix or remove it`, 2);
  return { current: stringMember(raw, "current"), contexts: Object.fromEntries(Object.entries(contexts).map(([name, c]) => [name, contextOf(c)])) };
}

/** A context as the file keeps it: its text members (a member of another type is left out). */
function contextOf(c: unknown): Context {
  const out: Context = {};
  for (const k of ["url", "token", "issuer", "user"] as const) {
    const v = stringMember(c, k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

export function saveConfig(config: Config): void {
  const f = configFile();
  mkdirSync(join(f, ".."), { recursive: true, mode: 0o700 });
  writeFileSync(f, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(f, 0o600);
}

/** A gateway URL in one spelling: no trailing slash, lower-case scheme and host, default port dropped. */
export function normalUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new CliError(`not a URL: ${url}`, 2);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new CliError(`not an http(s) URL: ${url}`, 2);
  return `${u.origin}${u.pathname}`.replace(/\/+$/, "");
}

/** Where a command goes and with which token. */
export interface Target {
  url: string;
  token?: string;
  /** The context in use (by name), when there is one. */
  context?: string;
}

/**
 * The gateway: --url, else VNM_URL, else the context's (--context, else the current one), else
 * the local default. The token: the one that gateway issued, kept in the context in use or, when
 * the gateway is another one, in a context logged in to it; none otherwise.
 */
export function target(flags: { url?: string; context?: string }): Target {
  const config = loadConfig();
  const name = flags.context ?? config.current;
  if (flags.context && !config.contexts[flags.context]) throw new CliError(`no context named ${flags.context} (vnm config get-contexts lists them)`, 2);
  const ctx = name ? config.contexts[name] : undefined;
  const url = normalUrl(flags.url || process.env["VNM_URL"] || ctx?.url || DEFAULT_URL);
  const issued = (c: Context | undefined) => c?.token !== undefined && c.issuer !== undefined && normalUrl(c.issuer) === url;
  if (issued(ctx)) return { url, token: ctx!.token, context: name };
  const other = Object.entries(config.contexts).find(([, c]) => issued(c));
  return other ? { url, token: other[1].token, context: other[0] } : { url, context: ctx?.url && normalUrl(ctx.url) === url ? name : undefined };
}
