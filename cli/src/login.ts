// vnm login: HTTP Basic at /login; the password from VNM_PASSWORD, or asked on the terminal
// without echo (@inquirer/password). The token is kept in the context of that gateway.
// vnm logout: POST /logout ends the kept token (on every gateway), and it is forgotten here; the
// user's other sessions (the console, another context) go on. vnm logout --all: POST
// /logout/all ends every token of the user, and every context holding one of that gateway's
// tokens for that user forgets it.
import password from "@inquirer/password";
import { Api } from "./client.ts";
import { type Config, loadConfig, normalUrl, saveConfig, target } from "./config.ts";
import { CliError, usage } from "./errors.ts";
import { say } from "./text.ts";
import { stringMember } from "@vnm/kit/values";

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
  const key = stringMember(body, "key");
  const expires = stringMember(body, "expires");
  if (key === undefined || expires === undefined) throw new CliError(`error: ${url} answered a login without a token (key, expires)`, 1);
  const name = contextFor(config, url, flags.context);
  config.contexts[name] = { ...config.contexts[name], url, token: key, issuer: url, user };
  config.current ??= name;
  saveConfig(config);
  say(`logged in to ${url} as ${user} until ${expires} (context ${name})\n`);
}

export async function logout(flags: Flags, all = false): Promise<void> {
  const t = target(flags);
  if (!t.token || !t.context) {
    say(`not logged in to ${t.url}\n`);
    return;
  }
  // A token the gateway no longer takes (expired, or ended elsewhere) is forgotten all the same.
  const ended = await new Api(t).call("POST", all ? "/logout/all" : "/logout").then(
    () => true,
    (err: unknown) => {
      if (err instanceof CliError && err.status === 401) return false;
      throw err;
    },
  );
  const config = loadConfig();
  const user = config.contexts[t.context]?.user;
  const forgotten: string[] = [];
  for (const [name, ctx] of Object.entries(config.contexts)) {
    const same = name === t.context || (all && ended && ctx.token !== undefined && ctx.issuer !== undefined && normalUrl(ctx.issuer) === t.url && ctx.user === user);
    if (!same) continue;
    delete ctx.token;
    delete ctx.issuer;
    forgotten.push(name);
  }
  saveConfig(config);
  const who = user ? ` ${user}` : "";
  if (!ended) say(`logged out of ${t.url}: the kept token had already ended or expired; forgotten (context ${t.context})\n`);
  else if (all) say(`logged out of ${t.url} everywhere: every token of${who || " this user"} has ended, on every gateway; forgotten here (context ${forgotten.join(", ")})\n`);
  else say(`logged out of ${t.url}: this login's token has ended and is forgotten (context ${t.context}); other sessions of${who || " this user"} go on (vnm logout --all ends them)\n`);
}
