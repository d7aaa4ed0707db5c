#!/usr/bin/env node
// vnm: the operators' command line. Its kinds, verbs and flags come from the proto catalog the
// gateway serves from, so it cannot drift from the API. Exit status: 0 done, 1 the API refused
// (4xx or 5xx, the error on stderr), 2 a usage error, 3 the gateway cannot be reached.
import { catalog } from "@vnm/kit";
import { Command, CommanderError } from "commander";
import { CliError } from "./client.ts";
import { addKindCommand, commandOf } from "./commands.ts";
import { completion } from "./completion.ts";
import { follow } from "./events.ts";
import { login, logout } from "./login.ts";

function program(): Command {
  const p = new Command("vnm").description("Manage virtual networks through the vnm API").option("--url <url>", "the gateway (default: VNM_URL, or the one logged in to)");
  p.exitOverride().showHelpAfterError(false);
  p.command("login")
    .description("log in; the token is kept in ~/.config/vnm (mode 600)")
    .option("-u, --user <name>", "user name", process.env["VNM_USER"] ?? "admin")
    .option("--project <tenant>", "act in this tenant (X-Auth-Project)")
    .action((o: { user: string; project?: string }) => login(p.opts()["url"], o.user, o.project));
  p.command("logout")
    .description("end every token of the logged-in user, on every gateway, and forget the kept one")
    .action(() => logout(p.opts()["url"]));
  p.command("events")
    .description("follow the change feed (/events), resuming where it left off")
    .option("--from <id>", "start after this event id")
    .action((o: { from?: string }) => follow(p.opts()["url"], o.from));
  const c = catalog();
  const kinds = [...c.kinds.values()].sort((a, b) => commandOf(a).localeCompare(commandOf(b)));
  for (const k of kinds) addKindCommand(p, k, c.routes);
  p.command("completion <shell>")
    .description("print a bash or zsh completion script")
    .action((shell: string) => {
      process.stdout.write(completion(p, shell));
    });
  return p;
}

try {
  await program().parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Help and version are not errors; anything else commander refused is a usage error.
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  if (err instanceof CliError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(err.exitCode);
  }
  throw err;
}
