// vnm login: HTTP Basic at /login; the password from VNM_PASSWORD, or asked on the terminal
// without echo (@inquirer/password). The token is kept in the context of that gateway.
// vnm logout: POST /logout ends every token of the user (on every gateway); the kept one goes.
import password from "@inquirer/password";
import { Api } from "./client.ts";
import { type Config, loadConfig, normalUrl, saveConfig, target } from "./config.ts";
import { usage } from "./errors.ts";
import { say } from "./text.ts";

export interface Flags {
  url?: string;
  context?: string;
}

async function askPassword(user: string): Promise<string> {
  if (!process.stdin.isTTY) throw usage("no password: set VNM_PASSWORD, or run vnm login on a terminal");
  try {
    return await password({ message: `Password of ${user}:`, mask: false }, { output: process.stderr });
  } catch {
    throw usage("login cancelled");
  }
}

/**
 * The context a login at `url` is kept in: --context; else the current one when it is for this
 * gateway (or for none yet); else the one for this gateway; else a new one named after its host.
 * Only a first context becomes the current one: use-context changes it.
 */
function contextFor(config: Config, url: string, flag?: string): string {
  if (flag) return flag;
  const current = config.current ? config.contexts[config.current] : undefined;
  if (config.current && current && (!current.url || normalUrl(current.url) === url)) return config.current;
  const existing = Object.entries(config.contexts).find(([, c]) => c.url && normalUrl(c.url) === url);
  if (existing) return existing[0];
  return config.current || Object.keys(config.contexts).length ? new URL(url).host : "default";
}

export async function login(flags: Flags, user: string, project?: string): Promise<void> {
  const config = loadConfig();
  const url = normalUrl(flags.url || process.env["VNM_URL"] || (flags.context ? config.contexts[flags.context]?.url : undefined) || target(flags).url);
  const pw = process.env["VNM_PASSWORD"] ?? (await askPassword(user));
  const headers: Record<string, string> = { authorization: `Basic ${Buffer.from(`${user}:${pw}`).toString("base64")}` };
  if (project) headers["x-auth-project"] = project;
  const { body } = await new Api({ url }).call("POST", "/login", undefined, headers);
  const { key, expires } = body as { key: string; expires: string };
  const name = contextFor(config, url, flags.context);
  config.contexts[name] = { ...config.contexts[name], url, token: key, issuer: url, user };
  config.current ??= name;
  saveConfig(config);
  say(`logged in to ${url} as ${user} until ${expires} (context ${name})\n`);
}

export async function logout(flags: Flags): Promise<void> {
  const t = target(flags);
  if (!t.token || !t.context) {
    say(`not logged in to ${t.url}\n`);
    return;
  }
  await new Api(t).call("POST", "/logout");
  const config = loadConfig();
  const ctx = config.contexts[t.context]!;
  delete ctx.token;
  delete ctx.issuer;
  saveConfig(config);
  say(`logged out of ${t.url}: every token of this user has ended\n`);
}
