#!/usr/bin/env node
// vnm: the operators' command line. Its kinds, verbs and flags come from the proto catalog the
// gateway serves from, so it cannot drift from the API. Exit status: 0 done, 1 the API refused
// (the error on stderr), 2 a usage error, 3 the gateway cannot be reached; one line on stderr
// (and a line per violation), never a stack trace.
import { Command, CommanderError, Option } from "commander";
import pkg from "../package.json" with { type: "json" };
import { apply, deleteFiles, diff, type DryRun } from "./apply.ts";
import { apiOf, addKindCommand, flagsOf } from "./commands.ts";
import { completeItems, completion } from "./completion.ts";
import { configCommand } from "./contexts.ts";
import { objectOf } from "./client.ts";
import { CliError, usage } from "./errors.ts";
import { followEvents } from "./events.ts";
import { allKinds } from "./kinds.ts";
import { addQuotaVerbs } from "./quota.ts";
import { login, logout } from "./login.ts";
import { quietOnClosedPipes } from "./stdin.ts";
import { clean, say } from "./text.ts";
import { messageOf } from "@vnm/kit/values";

/** vnm apply: its files, --dry-run and --prune (README, "Files", "Dry runs", "Prune"). */
function addApplyCommand(p: Command, files: () => Option): void {
  p.command("apply")
    .description("create or update the items of YAML or JSON documents (kind:, id: or the kind's natural key, fields); every document is checked first")
    .addOption(files())
    .addOption(
      new Option("--dry-run [strategy]", "server: send each write as a dry run (the API checks everything, stores nothing); client: send no write; none: apply")
        .choices(["none", "client", "server"])
        .preset("client")
        .default("none"),
    )
    .option(
      "--prune",
      "after applying, delete the items of the file's kinds that the file does not name: only within the tenants its top-level documents name (tenantId: required) and under the parents its other documents name; needs --all or --prune-prefix",
    )
    .option("--all", "with --prune: every such item")
    .option("--prune-prefix <prefix>", "with --prune: only such items whose name starts with <prefix>")
    .addHelpText(
      "after",
      "\nPrune never looks outside the tenants and parents the file names; a file holding a kind it cannot scope so (one without a tenant: hosts, tunnel zones, VTEPs, users; one listed elsewhere than under its parent: ports) is refused, nothing sent.\nExample: vnm apply -f net/ --prune --prune-prefix lab- --dry-run=server",
    )
    .action((o: { filename: string[]; dryRun: DryRun; prune?: boolean; all?: boolean; prunePrefix?: string }) => {
      if (!o.prune && (o.all || o.prunePrefix !== undefined)) throw usage("--all and --prune-prefix go with --prune");
      if (o.prune && !o.all && !o.prunePrefix) throw usage("--prune needs --all (every item of the file's kinds it does not name, in its tenants and parents) or --prune-prefix <prefix> (only those whose name starts with it)");
      if (o.all && o.prunePrefix !== undefined) throw usage("--prune takes --all or --prune-prefix, not both");
      return apply(apiOf(p), o.filename, { dryRun: o.dryRun, prune: o.prune ? { all: o.all === true, prefix: o.prunePrefix } : undefined });
    });
}

function program(): Command {
  const p = new Command("vnm")
    .description("Manage virtual networks through the vnm API")
    .version(pkg.version, "-v, --version", "print the CLI's version")
    .option("--url <url>", "the gateway (default: VNM_URL, or the context's)")
    .option("--context <name>", "the context (gateway and token) to use instead of the current one");
  p.exitOverride().showHelpAfterError(false);
  p.configureOutput({ outputError: (text, write) => write(clean(text.trimEnd()) + "\n") });
  const flags = () => flagsOf(p);
  p.command("login")
    .description("log in; the token is kept in ~/.config/vnm (mode 600), for this gateway only")
    .option("-u, --user <name>", "user name", process.env["VNM_USER"] ?? "admin")
    .option("--project <tenant>", "act in this tenant (X-Auth-Project)")
    .action((o: { user: string; project?: string }) => login(flags(), o.user, o.project));
  p.command("logout")
    .description("end the kept token, on every gateway, and forget it; --all: end every token of the user")
    .option("--all", "log out everywhere: end every token of the user (the console's and other contexts' too)")
    .action((o: { all?: boolean }) => logout(flags(), o.all === true));
  p.command("version")
    .description("print the CLI's version and the gateway's")
    .action(async () => {
      process.stdout.write(`client: ${pkg.version}\n`);
      const api = apiOf(p);
      const root = objectOf(await api.call("GET", "/"));
      process.stdout.write(`server: ${clean(String(root["version"] ?? "unknown"))} (${api.url})\n`);
    });
  p.addCommand(configCommand(flags));
  p.command("events")
    .description("follow the change feed (/events), resuming where it left off")
    .option("--from <id>", "start after this event id")
    .action((o: { from?: string }) => followEvents(apiOf(p), o.from));
  const files = () => new Option("-f, --filename <file...>", "a file, a directory, or - for standard input").makeOptionMandatory();
  addApplyCommand(p, files);
  p.command("diff")
    .description("show what apply -f would change, sending nothing; exit 1 when something would")
    .addOption(files())
    .action((o: { filename: string[] }) => diff(apiOf(p), o.filename));
  p.command("delete")
    .description("delete the items that YAML or JSON documents name, children before their parents")
    .addOption(files())
    .option("--ignore-not-found", "an item that is not there is not an error")
    .action((o: { filename: string[]; ignoreNotFound?: boolean }) => deleteFiles(apiOf(p), o.filename, o.ignoreNotFound === true));
  for (const k of allKinds()) addKindCommand(p, k);
  addQuotaVerbs(p);
  p.command("completion <shell>")
    .description("print a bash, zsh or fish completion script (ids and names complete too)")
    .action((shell: string) => {
      process.stdout.write(completion(p, shell));
    });
  p.command("__complete", { hidden: true })
    .argument("[words...]")
    .allowUnknownOption()
    .helpOption(false)
    .action(async (words: string[]) => {
      const out = await completeItems(apiOf(p), words);
      if (out) process.stdout.write(`${out}\n`);
    });
  return p;
}

function fail(err: unknown): never {
  if (err instanceof CommanderError) {
    // Help and version are not errors; anything else commander refused is a usage error.
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  if (err instanceof CliError) {
    // Every line as a terminal may show it (a message may quote a tenant's names, or the user's input).
    if (err.message) say(`${err.message}\n`);
    process.exit(err.exitCode);
  }
  say(`vnm: ${messageOf(err)}\n`);
  process.exit(1);
}

quietOnClosedPipes();
process.on("unhandledRejection", fail);
program().parseAsync(process.argv).catch(fail);
