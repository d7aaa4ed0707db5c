// vnm config: the named gateways (contexts) of the config file, each with its own token.
import { Command } from "commander";
import { type Config, DEFAULT_URL, loadConfig, normalUrl, saveConfig } from "./config.ts";
import { usage } from "./errors.ts";
import { fit, lines } from "./output.ts";
import { clean, say } from "./text.ts";

function must(config: Config, name: string): void {
  if (!config.contexts[name]) throw usage(`no context named ${name} (vnm config get-contexts lists them)`);
}

export function configCommand(flags: () => { url?: string; context?: string }): Command {
  const c = new Command("config").description("the contexts: named gateways, each with its own login");
  c.command("set-context <name>")
    .description("add or change a context; a new gateway URL drops the context's token")
    .option("--url <url>", "the gateway")
    .option("--user <name>", "the user to log in as")
    .option("--use", "make it the current context")
    .action((name: string, o: { url?: string; user?: string; use?: boolean }) => {
      // `vnm config set-context x --url u` and `vnm --url u config set-context x` alike.
      o.url ??= flags().url;
      const config = loadConfig();
      config.contexts[name] ??= {};
      const ctx = config.contexts[name];
      if (o.url) {
        const url = normalUrl(o.url);
        if (ctx.url && normalUrl(ctx.url) !== url) {
          delete ctx.token;
          delete ctx.issuer;
        }
        ctx.url = url;
      }
      ctx.url ??= DEFAULT_URL;
      if (o.user) ctx.user = o.user;
      if (o.use || !config.current) config.current = name;
      saveConfig(config);
      say(`context ${name}: ${ctx.url}${config.current === name ? " (current)" : ""}\n`);
    });
  c.command("use-context <name>")
    .description("make a context the current one")
    .action((name: string) => {
      const config = loadConfig();
      must(config, name);
      config.current = name;
      saveConfig(config);
      say(`switched to context ${name}\n`);
    });
  c.command("delete-context <name>")
    .description("forget a context and its token")
    .action((name: string) => {
      const config = loadConfig();
      must(config, name);
      delete config.contexts[name];
      if (config.current === name) delete config.current;
      saveConfig(config);
    });
  c.command("current-context")
    .description("print the current context's name")
    .action(() => {
      const name = flags().context ?? loadConfig().current;
      if (!name) throw usage("no current context (vnm config use-context NAME)");
      process.stdout.write(`${name}\n`);
    });
  c.command("get-contexts")
    .description("list the contexts")
    .action(() => {
      const config = loadConfig();
      const rows = [["CURRENT", "NAME", "URL", "USER", "LOGGED-IN"]];
      for (const [name, ctx] of Object.entries(config.contexts)) rows.push([name === config.current ? "*" : "", clean(name), clean(ctx.url ?? ""), clean(ctx.user ?? ""), ctx.token ? "yes" : "no"]);
      process.stdout.write(`${lines(rows, fit(rows, undefined)).join("\n")}\n`);
    });
  return c;
}
