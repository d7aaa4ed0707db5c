// One command per kind of the catalog (the proto files the gateway serves from), children
// included: `vnm <kind> list|get|describe|create|update|delete`, with flags from the proto fields
// (types, required, POST-only), the parents' path variables as options, and the item named by
// its key or its unique name, as are the parents and the items a field names (--bridge web,
// --inbound-filter-id web-in). Nothing here names a kind: a new proto is a new command.
import { type Command, Option } from "commander";
import type { CliRoute, Field } from "./catalog.ts";
import { Api } from "./client.ts";
import { target } from "./config.ts";
import { CliError, usage } from "./errors.ts";
import { watchList } from "./events.ts";
import { parseExact } from "./json.ts";
import { aliasesOf, allKinds, camel, type Kind, kebab, optionOf, type PathValues, variables } from "./kinds.ts";
import { describeLines, FORMATS, parseFormat, render, sortBy } from "./output.ts";
import { askSecret } from "./prompt.ts";
import { findItem, listItems, resolveParents, resolveRef, resolveRefs } from "./resolve.ts";
import { clean, say } from "./text.ts";
import { isRecord, messageOf } from "@vnm/kit/values";


type Opts = Record<string, unknown>;

/** An option's value when it is text (commander gives `true` for a flag without one). */
function textOpt(o: Opts, name: string): string | undefined {
  const v = o[name];
  return typeof v === "string" ? v : undefined;
}

/** The program's --url and --context. */
export const flagsOf = (program: Command) => ({ url: textOpt(program.opts(), "url"), context: textOpt(program.opts(), "context") });

/** The gateway and token of this invocation (--url, --context, the config). */
export const apiOf = (program: Command) => new Api(target(flagsOf(program)));

/** A flag's text as the field's JSON value. */
function fieldValue(f: Field, text: string): unknown {
  if (f.jsonObject || f.jsonValue || f.type === "message") {
    try {
      return parseExact(text);
    } catch {
      throw usage(`--${kebab(f.name)} must be JSON: ${clean(text)}`);
    }
  }
  if (f.repeated) return text === "" ? [] : text.split(",").map((t) => fieldValue({ ...f, repeated: false }, t));
  if (f.type === "bool") return text === "true" ? true : text === "false" ? false : text;
  if (/int|fixed/.test(f.type) && /^-?\d+$/.test(text)) return f.type.includes("64") ? text : Number(text);
  return text;
}

/** --data: a whole JSON object. */
function dataOf(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseExact(text);
  } catch (err) {
    throw usage(`--data is not JSON: ${clean(messageOf(err))}`);
  }
  if (!isRecord(v)) throw usage("--data must be a JSON object");
  return v;
}

/** The body from the field flags (and --data, which the flags override). */
function bodyOf(fields: Field[], opts: Opts): Record<string, unknown> {
  const body = typeof opts["data"] === "string" ? dataOf(opts["data"]) : {};
  for (const f of fields) {
    const v = opts[camel(kebab(f.name))];
    if (typeof v === "string") body[f.name] = fieldValue(f, v);
  }
  return body;
}

function addFieldFlags(cmd: Command, fields: Field[], mode: "create" | "update"): Command {
  for (const f of fields) {
    const kind = f.jsonObject || f.jsonValue || f.type === "message" ? "json" : f.repeated ? "a,b,..." : f.type;
    const o = new Option(`--${kebab(f.name)} <${kind}>`, `${f.name}${f.behaviors.has("REQUIRED") ? " (required)" : ""}${f.behaviors.has("IMMUTABLE") ? " (create only)" : ""}`);
    if (mode === "create" && f.behaviors.has("REQUIRED") && f.name !== "tenant_id") o.makeOptionMandatory();
    cmd.addOption(o);
  }
  return cmd.option("--data <json>", "the whole body as JSON (flags override its fields)");
}

/** The options of the path variables above the item. */
function addParentOptions(cmd: Command, names: string[]): Command {
  for (const v of names) cmd.option(`--${optionOf(v)} <${kebab(v)}>`, `path: ${v}`);
  return cmd;
}

/** The path values the options give. */
function valuesOf(names: string[], opts: Opts): PathValues {
  return Object.fromEntries(names.map((v) => [v, textOpt(opts, camel(optionOf(v)))]));
}

/** The path values the options give, each parent named by its key or its name (--bridge web) as its key. */
function parentsOf(api: Api, route: CliRoute | undefined, names: string[], opts: Opts): Promise<PathValues> {
  const values = valuesOf(names, opts);
  return route ? resolveParents(api, route.template, values, textOpt(opts, "tenant")) : Promise.resolve(values);
}

/** The tenant of an item (or a body): its tenant field's value. */
const tenantOf = (kind: Kind, item: Record<string, unknown>) => {
  const v = item[kind.info.resource.tenantField ?? ""];
  return typeof v === "string" && v !== "" ? v : undefined;
};

/**
 * A body's fields naming other items (--inbound-filter-id web-in, --inbound-mirror-ids m1,m2) by
 * name as their ids, looked up within the tenant the item has (its body's, else `tenant`).
 */
const refsOf = (api: Api, kind: Kind, body: Record<string, unknown>, tenant?: string) => resolveRefs(api, kind, body, tenantOf(kind, body) ?? tenant, (f) => `--${kebab(f)}`);

const withOutput = (c: Command) => c.option("-o, --output <format>", FORMATS);
const withTenant = (c: Command, kind: Kind, what = "a name is looked up in this tenant's items") =>
  kind.info.resource.tenantField ? c.option("--tenant <tenant>", what) : c;

const write = (text: string) => process.stdout.write(text ? `${text}\n` : "");

export function addKindCommand(program: Command, kind: Kind): void {
  const cmd = program
    .command(kind.command)
    .aliases(aliasesOf(kind))
    .description(`${kind.info.resource.displayName} (${kind.info.resource.mediaType})`);
  const parents = kind.parents();
  const around = kind.list ?? kind.get;
  const keyArg = `<${kebab(kind.key)}${kind.has("name") ? "|name" : ""}>`;
  const api = () => apiOf(program);
  if (kind.list) addList(cmd, kind, kind.list, api);
  if (kind.get) {
    withTenant(withOutput(addParentOptions(cmd.command(`get ${keyArg}`).description("show one item"), parents)), kind).action(async (arg: string, o: Opts) => {
      const format = parseFormat(textOpt(o, "output"));
      const a = api();
      write(render(kind, (await findItem(a, kind, arg, await parentsOf(a, around, parents, o), textOpt(o, "tenant"))).item, format));
    });
    withTenant(addParentOptions(cmd.command(`describe ${keyArg}`).description("show one item field by field, with its children and links"), parents), kind).action(
      async (arg: string, o: Opts) => {
        const a = api();
        const found = await findItem(a, kind, arg, await parentsOf(a, around, parents, o), textOpt(o, "tenant"));
        write([...describeLines(kind, found.item), ...(await childLines(a, kind, found.item))].join("\n"));
      },
    );
  }
  if (kind.create) {
    const fields = kind.writable("create");
    const c = withOutput(addFieldFlags(addParentOptions(cmd.command("create").description("create an item"), kind.parents(kind.create)), fields, "create"));
    c.action(async (o: Opts) => {
      const format = parseFormat(textOpt(o, "output"));
      const a = api();
      const values = await parentsOf(a, kind.create, kind.parents(kind.create), o);
      const body = await withSecrets(kind, await refsOf(a, kind, bodyOf(fields, o)));
      write(render(kind, (await a.call("POST", kind.path(kind.create, values, "create"), body)).body, format));
    });
  }
  if (!kind.create && kind.creates.length > 0) addCreateUnder(cmd, kind, api);
  for (const a of kind.actions) addAction(cmd, kind, a, keyArg, api);
  if (kind.update) {
    const fields = kind.writable("update");
    const c = withTenant(withOutput(addFieldFlags(addParentOptions(cmd.command(`update ${keyArg}`).description("change an item"), parents), fields, "update")), kind);
    // A PUT replaces: the item as it is now, with what the flags change, if it has not changed meanwhile.
    c.action(async (arg: string, o: Opts) => {
      const format = parseFormat(textOpt(o, "output"));
      const a = api();
      const found = await findItem(a, kind, arg, await parentsOf(a, around, parents, o), textOpt(o, "tenant"));
      const changes = await refsOf(a, kind, bodyOf(fields, o), tenantOf(kind, found.item) ?? textOpt(o, "tenant"));
      const body = { ...kept(kind, found.item), ...changes };
      const path = kind.path(kind.update, kind.valuesOf(found.item), "update");
      write(render(kind, (await a.call("PUT", path, body, found.etag ? { "if-match": found.etag } : {})).body, format));
    });
  }
  if (kind.delete) {
    withTenant(addParentOptions(cmd.command(`delete <${kebab(kind.key)}${kind.has("name") ? "|name" : ""}...>`).description("delete items"), parents), kind).action(
      async (args: string[], o: Opts) => {
        const a = api();
        let failed: CliError | undefined;
        const values = await parentsOf(a, around, parents, o);
        for (const arg of args) {
          try {
            await deleteItem(a, kind, arg, values, textOpt(o, "tenant"));
          } catch (err) {
            if (!(err instanceof CliError) || err.exitCode === 3) throw err;
            say(`${err.message}\n`);
            failed = err;
          }
        }
        if (failed) throw new CliError("", failed.exitCode);
      },
    );
  }
}

/** `list` (the default verb: `vnm bridges`), with its parents by key or name, --sort-by and --watch. */
function addList(cmd: Command, kind: Kind, list: CliRoute, api: () => Api): void {
    const c = withTenant(
      withOutput(addParentOptions(cmd.command("list", { isDefault: true }).description(`list ${kind.info.resource.displayName} items (the default verb)`), kind.parents(list))),
      kind,
      "only this tenant's",
    );
    if (list.queryFields.has("limit")) c.option("--limit <n>", "at most n items");
    c.option("--sort-by <jsonpath>", "sort the items by this field of each ({.name}, .name, .a.b)");
    c.option("-w, --watch", "after the list, print each change as it happens");
    // The default verb: a word after the kind that is no verb lands here.
    c.allowExcessArguments(true);
    c.action(async (o: Opts, self: Command) => {
      if (self.args.length) throw usage(`error: unknown command '${clean(self.args[0]!)}' (${kind.command} has ${cmd.commands.map((v) => v.name()).join(", ")})`);
      const format = parseFormat(textOpt(o, "output"));
      const by = textOpt(o, "sortBy");
      const sort = by === undefined ? undefined : sortBy(by);
      const values = await parentsOf(api(), list, kind.parents(list), o);
      const q = new URLSearchParams();
      if (o["tenant"]) q.set("tenant_id", String(o["tenant"]));
      if (o["limit"]) q.set("limit", String(o["limit"]));
      const path = kind.path(list, values, "list") + (q.size ? `?${q}` : "");
      if (o["watch"]) return watchList(api(), kind, path, format, textOpt(o, "tenant"));
      const body = (await api().call("GET", path)).body;
      write(render(kind, sort && Array.isArray(body) ? sort(body) : body, format));
    });
}

/**
 * A create's write-only secret (a user's password) that neither a flag nor --data gives: asked
 * at a prompt without echo on a terminal, else read from standard input (its first line).
 */
async function withSecrets(kind: Kind, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  for (const f of kind.writable("create")) {
    if (f.name !== "password" || !f.behaviors.has("INPUT_ONLY") || body[f.name] !== undefined) continue;
    body[f.name] = await askSecret(`${kebab(f.name)} of the new ${kind.command}`, `--${kebab(f.name)}`);
  }
  return body;
}

/**
 * create for a kind made under one of several kinds of parent (a port: `--router` or `--bridge`):
 * an option per parent variable, exactly one route's given, each named by its key or name.
 */
function addCreateUnder(cmd: Command, kind: Kind, api: () => Api): void {
  const fields = kind.writable("create");
  const names = [...new Set(kind.creates.flatMap((r) => variables(r.template)))];
  const c = cmd.command("create").description(`create an item on a ${names.map((v) => optionOf(v)).join(" or ")}`);
  for (const v of names) c.option(`--${optionOf(v)} <${optionOf(v)}>`, `on this ${optionOf(v)} (its id or name)`);
  withOutput(addFieldFlags(c, fields, "create"));
  c.action(async (o: Opts) => {
    const format = parseFormat(textOpt(o, "output"));
    const given = kind.creates.filter((r) => variables(r.template).every((v) => textOpt(o, camel(optionOf(v)))));
    if (given.length !== 1) throw usage(`give one of ${kind.creates.map((r) => variables(r.template).map((v) => `--${optionOf(v)}`).join(" ")).join(", ")}`);
    const route = given[0]!;
    const a = api();
    const values = await parentsOf(a, route, variables(route.template), o);
    const body = await withSecrets(kind, await refsOf(a, kind, bodyOf(fields, o)));
    write(render(kind, (await a.call("POST", kind.path(route, values, "create"), body)).body, format));
  });
}

/**
 * An item's action: `<kind> <word> <item> [<arg>...]` POSTs the body its arguments make (`port
 * link <port> <peer>`: {peerId}, the peer named like the item, by key or name) and prints the
 * item; `<kind> un<word> <item>` DELETEs it and says so.
 */
function addAction(cmd: Command, kind: Kind, a: Kind["actions"][number], keyArg: string, api: () => Api): void {
  const parents = kind.parents();
  if (a.method === "POST") {
    const args = a.args.map((f) => `<${optionOf(f)}>`).join(" ");
    const c = withTenant(withOutput(addParentOptions(cmd.command(`${a.word} ${keyArg} ${args}`.trim()).description(`${a.word} an item (POST ${a.route.template})`), parents)), kind);
    c.action(async (arg: string, ...rest: unknown[]) => {
      const o = rest.at(-2) as Opts;
      const values = rest.slice(0, a.args.length) as string[];
      const format = parseFormat(textOpt(o, "output"));
      const x = api();
      const found = await findItem(x, kind, arg, await parentsOf(x, kind.list ?? kind.get, parents, o), textOpt(o, "tenant"));
      const body: Record<string, unknown> = {};
      for (const [i, f] of a.args.entries()) {
        // An argument naming an item (the item's field of that name names one: peerId, another port) is resolved as a field's value is.
        const k = kind.refOf(f);
        body[f] = k ? await resolveRef(x, k, values[i]!, tenantOf(kind, found.item) ?? textOpt(o, "tenant"), `<${optionOf(f)}>`) : values[i];
      }
      write(render(kind, (await x.call("POST", kind.path(a.route, kind.valuesOf(found.item), a.word), body)).body, format));
    });
  } else {
    const done = `un${a.word}${a.word.endsWith("e") ? "d" : "ed"}`;
    withTenant(addParentOptions(cmd.command(`un${a.word} ${keyArg}`).description(`un${a.word} an item (DELETE ${a.route.template})`), parents), kind).action(
      async (arg: string, o: Opts) => {
        const x = api();
        const found = await findItem(x, kind, arg, await parentsOf(x, kind.list ?? kind.get, parents, o), textOpt(o, "tenant"));
        await x.call("DELETE", kind.path(a.route, kind.valuesOf(found.item), `un${a.word}`));
        write(`${kind.command}/${clean(kind.keyOf(found.item))} ${done}`);
      },
    );
  }
}

/** The writable fields an item has now (what a PUT keeps). */
export function kept(kind: Kind, item: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    kind
      .writable("update")
      .filter((f) => item[f.name] !== undefined && item[f.name] !== null)
      .map((f) => [f.name, item[f.name]]),
  );
}

export async function deleteItem(api: Api, kind: Kind, arg: string, values: PathValues, tenant?: string): Promise<void> {
  const found = await findItem(api, kind, arg, values, tenant);
  await api.call("DELETE", kind.path(kind.delete, kind.valuesOf(found.item), "delete"), undefined, found.etag ? { "if-match": found.etag } : {});
  write(`${kind.command}/${clean(kind.keyOf(found.item))} deleted`);
}

/** describe's list of the items below this one, per kind. */
async function childLines(api: Api, kind: Kind, item: Record<string, unknown>): Promise<string[]> {
  const out: string[] = [];
  for (const child of allKinds()) {
    if (child.info.parent !== kind.info.kind || !child.list) continue;
    const values = kind.valuesBelow(item, child.list.template);
    if (!values || !variables(child.list.template).every((v) => values[v] !== undefined)) continue;
    let items: Record<string, unknown>[];
    try {
      items = await listItems(api, child, values);
    } catch (err) {
      if (err instanceof CliError && err.exitCode === 1) {
        out.push(`  ${child.command}: ${err.message.split("\n")[0]}`);
        continue;
      }
      throw err;
    }
    out.push(`  ${child.command} (${items.length}):`);
    for (const i of items) out.push(`    ${clean(child.keyOf(i))}${typeof i["name"] === "string" ? `  ${clean(i["name"])}` : ""}`);
  }
  return out.length ? ["Children:", ...out] : [];
}
